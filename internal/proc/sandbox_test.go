package proc

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// needSandbox returns a sandbox with bwrap found and probed, or skips the
// test saying why: only a machine whose kernel forbids the namespaces (or
// without bubblewrap, which .ci/run installs) skips.
func needSandbox(t testing.TB) Sandbox {
	t.Helper()
	bw, err := FindBwrap("")
	if err != nil {
		t.Skipf("sandbox tests need bubblewrap: %v", err)
	}
	sb := Sandbox{Bwrap: bw}
	if err := ProbeSandbox(context.Background(), sb); err != nil {
		t.Skipf("sandbox tests skipped: the kernel forbids it here: %v", err)
	}
	return sb
}

func TestSandboxArgvOrder(t *testing.T) {
	sb := Sandbox{Bwrap: "/usr/bin/bwrap", Write: []string{"/w"}, ReadOnly: []string{"/w/.git"},
		Binds: []Bind{{Src: "/c/reg", Dest: "/w/cargo/registry", ReadOnly: true}, {Src: "/c/x", Dest: "/root/.cache/x"}},
		Home:  "/tmp/h", HomePath: "/root", Wrap: []string{"/bin/helper", "x"}}
	got := sb.bwrapArgs("/bin/prog", []string{"a", "b c"}, "/w")
	want := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--new-session", "--die-with-parent",
		"--unshare-net", "--bind", "/tmp/h", "/root", "--bind", "/w", "/w",
		"--ro-bind", "/c/reg", "/w/cargo/registry", "--bind", "/c/x", "/root/.cache/x", "--ro-bind", "/w/.git", "/w/.git",
		"--chdir", "/w", "--", "/bin/helper", "x", "--", "/bin/prog", "a", "b c"}
	if !slices.Equal(got, want) {
		t.Errorf("argv\n got %q\nwant %q", got, want)
	}
	sb.Net, sb.Wrap = true, nil
	if got := sb.bwrapArgs("/bin/prog", nil, ""); slices.Contains(got, "--unshare-net") || slices.Contains(got, "--chdir") {
		t.Errorf("shared network, no dir: %q", got)
	}
	sb.Home = ""
	if got := sb.bwrapArgs("/bin/prog", nil, ""); !slices.Equal(got[15:18], []string{"--tmpfs", "/root", "--bind"}) {
		t.Errorf("a home of the sandbox's own: %q", got)
	}
	// Covered directories come before the home and whatever is bound back.
	sb.Tmpfs = []string{"/run"}
	if got := sb.bwrapArgs("/bin/prog", nil, ""); !slices.Equal(got[15:19], []string{"--tmpfs", "/run", "--tmpfs", "/root"}) {
		t.Errorf("/run covered: %q", got)
	}
}

// TestSandboxExposesProgram: a program the fresh /tmp or home would hide
// is bound back, with the node_modules tree of an npm CLI's link.
func TestSandboxExposesProgram(t *testing.T) {
	root := t.TempDir()
	pkg := filepath.Join(root, "node_modules", "@x", "cli")
	os.MkdirAll(pkg, 0o755)
	os.MkdirAll(filepath.Join(root, "node_modules", ".bin"), 0o755)
	os.WriteFile(filepath.Join(pkg, "cli.js"), []byte("#!/bin/sh\n"), 0o755)
	link := filepath.Join(root, "node_modules", ".bin", "cli")
	os.Symlink("../@x/cli/cli.js", link)
	sb := Sandbox{Bwrap: "/usr/bin/bwrap"}
	_, args := sb.wrap(link, Spec{})
	line := strings.Join(args, " ")
	// The node_modules tree shows the link and the package; binding the
	// link on its own as well would fail: bubblewrap cannot make its mount
	// point where the fresh /tmp has no parent directory for it.
	nm := filepath.Join(root, "node_modules")
	if !strings.Contains(line, "--ro-bind "+nm+" "+nm+" ") || strings.Contains(line, "--ro-bind "+link+" ") {
		t.Errorf("want %s bound, and nothing inside it on its own: %s", nm, line)
	}
	if len(sb.Expose) != 0 {
		t.Errorf("wrap changed the caller's sandbox: %q", sb.Expose)
	}
	bwrap, err := FindBwrap("")
	if err != nil || ProbeSandbox(context.Background(), Sandbox{Bwrap: bwrap}) != nil {
		t.Skip("bubblewrap cannot run here; the argv above is checked")
	}
	// For real: a program under the host's /tmp runs in the fresh /tmp.
	res, err := Run(context.Background(), Spec{Path: link, Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: &Sandbox{Bwrap: bwrap}})
	if err != nil || res.ExitCode != 0 {
		t.Errorf("the exposed program did not run: %v %+v", err, res)
	}
}

// TestSandboxExposesThroughLinks: a program whose directory is reached
// through a link (a checkout's .tools linked to a shared one) is bound
// where the link leads, where bubblewrap can make its mount point; a link
// in a plain directory is bound as well, so it runs by its own path.
func TestSandboxExposesThroughLinks(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "shared", "bin")
	os.MkdirAll(real, 0o755)
	os.WriteFile(filepath.Join(real, "prog"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink(filepath.Join(root, "shared"), filepath.Join(root, "tools"))
	os.MkdirAll(filepath.Join(root, "plain"), 0o755)
	os.Symlink(filepath.Join(real, "prog"), filepath.Join(root, "plain", "prog"))
	got := exposed([]string{filepath.Join(root, "tools", "bin", "prog"), filepath.Join(root, "plain", "prog")})
	want := []string{filepath.Join(root, "plain", "prog"), filepath.Join(real, "prog")}
	if !slices.Equal(got, want) { // shortest first
		t.Errorf("exposed %q, want %q", got, want)
	}
}

// TestSandboxConfines runs a hostile shell under the sandbox: every write
// outside the writable directory fails, the read-only .git inside it stays
// unchanged, the home and /tmp are fresh, and no host process is visible.
func TestSandboxConfines(t *testing.T) {
	sb := needSandbox(t)
	root := t.TempDir()
	work := filepath.Join(root, "work")
	gitDir := filepath.Join(work, ".git")
	outside := filepath.Join(root, "outside")
	home := filepath.Join(root, "home")
	for _, d := range []string{gitDir, outside, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(gitDir, "config"), []byte("[core]\n"), 0o644)
	hostHome := t.TempDir()
	os.WriteFile(filepath.Join(hostHome, "secret"), []byte("key"), 0o600)
	sb.Write, sb.ReadOnly = []string{work}, []string{gitDir}
	sb.Home, sb.HomePath = home, hostHome
	script := `
try() { if ( eval "$1" ) 2>/dev/null; then echo "WROTE $2"; else echo "refused $2"; fi; }
try 'echo x > ` + outside + `/f' outside
try 'echo x >> .git/config' git-config
try 'mkdir .git/hooks' git-hooks
try 'echo x > /etc/cadre-test' etc
try 'echo ok > inside' worktree
try 'echo h > "$HOME/h"' home
try 'echo t > /tmp/t' tmp
test -e "$HOME/secret" && echo "SEES secret"
ls /proc | grep -c '^[0-9]' | sed 's/^/pids /'
`
	var log strings.Builder
	res, err := Run(context.Background(), Spec{Path: "/bin/sh", Args: []string{"-c", script}, Dir: work,
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + hostHome}, Log: &log, Sandbox: &sb})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v %d %s", err, res.ExitCode, log.String())
	}
	out := string(res.Stdout)
	for _, want := range []string{"refused outside", "refused git-config", "refused git-hooks", "refused etc",
		"WROTE worktree", "WROTE home", "WROTE tmp"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("want %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "SEES") {
		t.Errorf("the host home is visible:\n%s", out)
	}
	// sh, ls, grep, sed and bubblewrap's own init: a handful, not the host's.
	if !regexp.MustCompile(`(?m)^pids [1-9]$`).MatchString(out) {
		t.Errorf("want a handful of processes in /proc, got\n%s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(gitDir, "config")); string(b) != "[core]\n" {
		t.Errorf(".git/config changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(gitDir, "hooks")); err == nil {
		t.Error(".git/hooks was created")
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) > 0 {
		t.Errorf("wrote outside: %v", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "h")); string(b) != "h\n" {
		t.Errorf("the private home got %q", b)
	}
	if _, err := os.Stat(filepath.Join(hostHome, "h")); err == nil {
		t.Error("the host home was written")
	}
}

// TestSandboxOwnHome: HomePath without Home mounts an empty home of the
// sandbox's own: writable, hiding the user's files, with a program
// directory under the home still reachable, and nothing written on the
// host.
func TestSandboxOwnHome(t *testing.T) {
	sb := needSandbox(t)
	hostHome := t.TempDir()
	os.WriteFile(filepath.Join(hostHome, "secret"), []byte("key"), 0o600)
	bin := filepath.Join(hostHome, ".local", "bin")
	os.MkdirAll(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "tool"), []byte("#!/bin/sh\necho tool ran\n"), 0o755)
	sb.HomePath, sb.Expose = hostHome, []string{bin}
	script := `echo h > "$HOME/h" && echo wrote; test -e "$HOME/secret" && echo SEES; tool`
	var log strings.Builder
	res, err := Run(context.Background(), Spec{Path: "/bin/sh", Args: []string{"-c", script},
		Env: []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + hostHome}, Log: &log, Sandbox: &sb})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v %d %s", err, res.ExitCode, log.String())
	}
	if out := string(res.Stdout); out != "wrote\ntool ran\n" {
		t.Errorf("stdout %q, want the home written, the secret hidden, the tool run", out)
	}
	if _, err := os.Stat(filepath.Join(hostHome, "h")); err == nil {
		t.Error("the host home was written")
	}
}

// TestSandboxNoNetwork: without Net only the sandbox's own loopback exists,
// so a listener on the host's loopback is unreachable.
func TestSandboxNoNetwork(t *testing.T) {
	sb := needSandbox(t)
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash for /dev/tcp")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	script := `exec 3<>/dev/tcp/127.0.0.1/` + portOf(ln) + ` && echo connected || echo refused`
	for _, shared := range []bool{false, true} {
		sb.Net = shared
		res, err := Run(context.Background(), Spec{Path: "bash", Args: []string{"-c", script},
			Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: &sb})
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "refused\n", true: "connected\n"}[shared]
		if string(res.Stdout) != want {
			t.Errorf("Net=%v: got %q, want %q", shared, res.Stdout, want)
		}
	}
}

func portOf(ln net.Listener) string {
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return p
}

// TestSandboxProbeRefuses: a bubblewrap that cannot run is reported as
// ErrNoSandbox with its complaint, never ignored.
func TestSandboxProbeRefuses(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "bwrap")
	os.WriteFile(fake, []byte("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"), 0o755)
	err := ProbeSandbox(context.Background(), Sandbox{Bwrap: fake})
	if err == nil || !strings.Contains(err.Error(), "No permissions to creating new namespace") {
		t.Fatalf("probe: %v", err)
	}
	if _, err := FindBwrap(dir + "-none"); err == nil {
		t.Error("FindBwrap found bwrap in an empty PATH")
	}
}

// BenchmarkSandboxStart measures what the sandbox adds to starting an
// agent: the median of starts of `true` with and without it.
func BenchmarkSandboxStart(b *testing.B) {
	sb := needSandbox(b)
	for _, bc := range []struct {
		name string
		sb   *Sandbox
	}{{"plain", nil}, {"bwrap", &sb}} {
		b.Run(bc.name, func(b *testing.B) {
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				res, err := Run(context.Background(), Spec{Path: "/bin/true", Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: bc.sb})
				if err != nil || res.ExitCode != 0 {
					b.Fatal(err, res.StderrTail)
				}
				times = append(times, time.Since(start))
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms")
		})
	}
}
