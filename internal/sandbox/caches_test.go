package sandbox

import (
	"archive/zip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/proc"
)

// TestCacheMounts: without network a step reads the host's download
// caches in place and offline; with network it gets writable ones of its
// own, Go's fed from the host's on disk. Build caches are writable in the
// item's directory, and sandbox.caches adds paths read-only or writable.
func TestCacheMounts(t *testing.T) {
	host := t.TempDir()
	mod, cargo, gradle, maven := filepath.Join(host, "gomod"), filepath.Join(host, ".cargo"), filepath.Join(host, ".gradle", "caches"), filepath.Join(host, ".m2", "repository")
	items := t.TempDir()
	for _, network := range []string{NetDeny, NetAllow} {
		t.Run(network, func(t *testing.T) {
			p := &Policy{Network: network, Bwrap: "bwrap", BuildCache: filepath.Join(items, network),
				host:   hostCaches{goMod: mod, cargo: cargo, gradle: gradle, maven: maven},
				Caches: []Cache{{Path: "/opt/sdk"}, {Path: "~/.cache/ccache", Write: true}}}
			prep, err := p.Prepare(context.Background(), Step{Dir: t.TempDir(), Env: []string{"HOME=" + host, "PATH=/usr/bin", "GOFLAGS=-tags=x"}})
			if err != nil {
				t.Fatal(err)
			}
			defer prep.Close()
			sb, env, in := prep.Sandbox, prep.Env, func(s string) string { return filepath.Join(p.BuildCache, s) }
			want := map[string]string{
				"GOCACHE": in("go-build"), "npm_config_cache": in("npm"), "PIP_CACHE_DIR": in("pip"),
				"CARGO_HOME": in("cargo"), "GRADLE_USER_HOME": in("gradle"), "GRADLE_RO_DEP_CACHE": gradle,
				"MAVEN_OPTS": "-Dmaven.repo.local=" + in("m2") + " -Dmaven.repo.local.tail=" + maven,
			}
			if network == NetDeny {
				want["GOMODCACHE"], want["GOPROXY"], want["CARGO_NET_OFFLINE"] = mod, "off", "true"
			} else {
				want["GOMODCACHE"], want["GOFLAGS"] = in("go-mod"), "-tags=x -modcacherw"
				want["GOPROXY"] = "file://" + mod + "/cache/download,https://proxy.golang.org,direct"
			}
			for k, v := range want {
				if env[k] != v {
					t.Errorf("%s=%q, want %q", k, env[k], v)
				}
			}
			if network == NetAllow && env["CARGO_NET_OFFLINE"] != "" {
				t.Error("cargo offline with network")
			}
			for _, p := range []string{mod, gradle, maven, "/opt/sdk"} {
				if !slices.Contains(sb.Expose, p) {
					t.Errorf("%s not shown read-only: %q", p, sb.Expose)
				}
			}
			if !slices.Contains(sb.Write, p.BuildCache) {
				t.Errorf("build caches %s not writable: %q", p.BuildCache, sb.Write)
			}
			ccache := proc.Bind{Src: filepath.Join(p.BuildCache, "extra", Cache{Path: "~/.cache/ccache"}.dirName()), Dest: filepath.Join(host, ".cache/ccache")}
			if !slices.Contains(sb.Binds, ccache) {
				t.Errorf("binds %+v lack the writable sandbox.caches entry %+v", sb.Binds, ccache)
			}
		})
	}
}

// TestCacheOutsideHome: a writable sandbox.caches entry the sandbox could
// not make a mount point for is refused with a clear error, not a failed
// bubblewrap.
func TestCacheOutsideHome(t *testing.T) {
	p := &Policy{Network: NetDeny, Bwrap: "bwrap", BuildCache: t.TempDir(), Caches: []Cache{{Path: "/nonexistent/cache", Write: true}}}
	_, err := p.Prepare(context.Background(), Step{Dir: t.TempDir(), Env: []string{"HOME=" + t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "sandbox.caches: /nonexistent/cache:rw: no such directory here") {
		t.Errorf("err = %v", err)
	}
}

// goModule makes a module, example.com/m, whose one dependency,
// example.com/dep, is in a module cache of its own (the host's, for the
// test), downloaded from a module proxy on disk. It returns the module's
// directory and the cache. It skips without the go command.
func goModule(t *testing.T) (dir, modCache string) {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command")
	}
	root := t.TempDir()
	proxy := filepath.Join(root, "proxy", "example.com", "dep", "@v")
	os.MkdirAll(proxy, 0o755)
	gomod := "module example.com/dep\n\ngo 1.22\n"
	os.WriteFile(filepath.Join(proxy, "list"), []byte("v1.0.0\n"), 0o644)
	os.WriteFile(filepath.Join(proxy, "v1.0.0.info"), []byte(`{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}`), 0o644)
	os.WriteFile(filepath.Join(proxy, "v1.0.0.mod"), []byte(gomod), 0o644)
	f, err := os.Create(filepath.Join(proxy, "v1.0.0.zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, text := range map[string]string{"go.mod": gomod, "dep.go": "package dep\n\nfunc N() int { return 1 }\n"} {
		w, _ := zw.Create("example.com/dep@v1.0.0/" + name)
		w.Write([]byte(text))
	}
	zw.Close()
	f.Close()

	dir, modCache = filepath.Join(root, "m"), filepath.Join(root, "host-modcache")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n\nrequire example.com/dep v1.0.0\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "m.go"), []byte("package m\n\nimport \"example.com/dep\"\n\nfunc M() int { return dep.N() }\n"), 0o644)
	cmd := exec.Command(goCmd, "mod", "tidy")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOMODCACHE="+modCache, "GOPROXY=file://"+filepath.Join(root, "proxy"), "GOSUMDB=off",
		"GOFLAGS=-modcacherw", "GOCACHE="+filepath.Join(root, "gocache"), "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v: %s", err, out)
	}
	return dir, modCache
}

// hostEnv is the environment of a host whose home is home and whose Go
// module cache is modCache, as New reads it.
func hostEnv(home, modCache string) func(string) string {
	return func(k string) string {
		return map[string]string{"PATH": os.Getenv("PATH"), "HOME": home, "GOMODCACHE": modCache}[k]
	}
}

// needBwrap skips where bubblewrap is missing or the kernel forbids the
// namespaces it needs.
func needBwrap(t testing.TB) {
	t.Helper()
	bw, err := proc.FindBwrap("")
	if err != nil {
		t.Skipf("needs bubblewrap: %v", err)
	}
	if err := proc.ProbeSandbox(context.Background(), proc.Sandbox{Bwrap: bw}); err != nil {
		t.Skipf("the kernel forbids namespaces here: %v", err)
	}
}

// step runs `go build -v ./...` in dir as one confined step of p and
// returns its output: the packages it compiled, none when the build cache
// held them all. The step then tries to write the file plant and says so
// when it could.
func step(t *testing.T, p *Policy, dir, home, plant string) (string, int) {
	t.Helper()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GOTOOLCHAIN=local"}
	prep, err := p.Prepare(context.Background(), Step{Dir: dir, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close()
	for k, v := range prep.Env {
		env = append(env, k+"="+v)
	}
	var log strings.Builder
	res, err := proc.Run(context.Background(), proc.Spec{Path: "sh", Args: []string{"-c", "go build -v ./... 2>&1; status=$?; touch \"$1\" 2>/dev/null && echo planted; exit $status", "sh", plant},
		Dir: dir, Env: env, Log: &log, Sandbox: prep.Sandbox})
	if err != nil {
		t.Fatal(err)
	}
	return log.String(), res.ExitCode
}

// TestGoBuildsOffline: under network deny a module whose dependencies are
// in the host's module cache builds, reading that cache in place without
// writing to it; with network it builds too, from a copy of its own.
func TestGoBuildsOffline(t *testing.T) {
	needBwrap(t)
	dir, modCache := goModule(t)
	home := t.TempDir()
	getenv := hostEnv(home, modCache)
	for _, network := range []string{NetDeny, NetAllow} {
		t.Run(network, func(t *testing.T) {
			p, err := New(context.Background(), Settings{Network: network}, getenv)
			if err != nil {
				t.Fatal(err)
			}
			if p.host.goMod != modCache {
				t.Fatalf("host module cache %q, want %q", p.host.goMod, modCache)
			}
			p = p.ForItem(true, t.TempDir())
			planted := filepath.Join(modCache, "planted")
			out, code := step(t, p, dir, home, planted)
			if code != 0 || !strings.Contains(out, "example.com/dep") {
				t.Fatalf("exit %d, want a build of example.com/dep and example.com/m:\n%s", code, out)
			}
			if _, err := os.Stat(planted); err == nil || strings.Contains(out, "planted") {
				t.Errorf("the step wrote to the host's module cache:\n%s", out)
			}
		})
	}
}

// TestBuildCacheAcrossSteps: a second step of an item finds the build
// cache of its first (go compiles nothing again); another untrusted
// item's step has a build cache of its own, and cannot write the first's.
func TestBuildCacheAcrossSteps(t *testing.T) {
	needBwrap(t)
	dir, modCache := goModule(t)
	home := t.TempDir()
	getenv := hostEnv(home, modCache)
	run, err := New(context.Background(), Settings{Network: NetDeny}, getenv)
	if err != nil {
		t.Fatal(err)
	}
	caches := t.TempDir()
	a := run.ForItem(false, filepath.Join(caches, "a"))
	if out, code := step(t, a, dir, home, ""); code != 0 || !strings.Contains(out, "example.com/m") {
		t.Fatalf("first step: exit %d:\n%s", code, out)
	}
	if out, code := step(t, a, dir, home, ""); code != 0 || strings.Contains(out, "example.com/") {
		t.Errorf("second step of the item compiled again (exit %d): its build cache was lost:\n%s", code, out)
	}
	b := run.ForItem(false, filepath.Join(caches, "b"))
	prep, err := b.Prepare(context.Background(), Step{Dir: dir, Env: []string{"HOME=" + home}})
	if err != nil {
		t.Fatal(err)
	}
	prep.Close()
	if prep.Env["GOCACHE"] == a.BuildCache+"/go-build" || !strings.HasPrefix(prep.Env["GOCACHE"], b.BuildCache) {
		t.Fatalf("item b's GOCACHE %s is not its own", prep.Env["GOCACHE"])
	}
	if out, code := step(t, b, dir, home, ""); code != 0 || !strings.Contains(out, "example.com/m") {
		t.Errorf("another item's step found a build cache it should not share (exit %d):\n%s", code, out)
	}
	planted := filepath.Join(a.BuildCache, "go-build", "planted")
	prep, err = b.Prepare(context.Background(), Step{Dir: dir, Env: []string{"HOME=" + home, "PATH=/usr/bin:/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close()
	res, err := proc.Run(context.Background(), proc.Spec{Path: "touch", Args: []string{planted}, Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: prep.Sandbox})
	if err != nil {
		t.Fatal(err)
	}
	if _, serr := os.Stat(planted); res.ExitCode == 0 || serr == nil {
		t.Errorf("item b wrote into item a's build cache (exit %d)", res.ExitCode)
	}
}
