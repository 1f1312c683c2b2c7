package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/proc"
)

// A fresh home per step would leave every toolchain with empty caches:
// each step would download again what the host already holds, and under
// network deny could not build at all. So a step sees the host's download
// caches read-only, and keeps its build caches in a directory that lasts
// across steps (Policy.BuildCache): the repository's for trusted items,
// the item's own for untrusted ones, whose agents must not plant build
// output another item would use.

// Cache is an entry of sandbox.caches: a host path the agents see.
type Cache struct {
	// Path is absolute, or starts with "~/" for a path under the home.
	Path string
	// Write makes Path a writable directory kept with the step's build
	// caches, starting empty: the host's own is never written.
	Write bool
}

// ParseCache reads an entry of sandbox.caches, PATH or PATH:rw (PATH:ro
// is PATH). Its error says what is wanted, for a one-line config error.
func ParseCache(s string) (Cache, error) {
	c := Cache{Path: s}
	if p, ok := strings.CutSuffix(s, ":rw"); ok {
		c = Cache{Path: p, Write: true}
	} else if p, ok := strings.CutSuffix(s, ":ro"); ok {
		c.Path = p
	}
	rel, home := strings.CutPrefix(c.Path, "~/")
	switch {
	case strings.Contains(c.Path, ":"):
		return c, fmt.Errorf("want PATH, PATH:ro or PATH:rw, got %q", s)
	case !home && !filepath.IsAbs(c.Path):
		return c, fmt.Errorf("want an absolute path or ~/path, got %q", s)
	case c.Path == "/" || (home && (rel == "" || rel == ".")):
		return c, fmt.Errorf("names the whole root or home, got %q; name a cache directory", s)
	case c.Path != filepath.Clean(c.Path) && !home, home && rel != filepath.Clean(rel), rel == ".." || strings.HasPrefix(rel, "../"):
		return c, fmt.Errorf("want a clean path (no .., . or trailing /), got %q", s)
	}
	if home {
		for _, secret := range secretDirs {
			if rel == secret || strings.HasPrefix(rel, secret+"/") || strings.HasPrefix(secret, rel+"/") {
				return c, fmt.Errorf("%q would show ~/%s, which holds credentials; name a cache directory", s, secret)
			}
		}
	}
	return c, nil
}

// secretDirs are places under the home that hold keys and tokens: never
// a cache, and never to be shown to an agent.
var secretDirs = []string{".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".config/gh", ".docker", ".kube",
	".netrc", ".npmrc", ".pypirc", ".git-credentials", ".cargo/credentials.toml", ".m2/settings.xml", ".gradle/gradle.properties"}

// hostCaches are the host's download caches, found once per run; a path
// is empty when the host has none there.
type hostCaches struct {
	goMod  string // go env GOMODCACHE
	cargo  string // CARGO_HOME (~/.cargo): its registry and git hold the downloads
	maven  string // ~/.m2/repository
	gradle string // GRADLE_USER_HOME/caches (~/.gradle/caches)
	rustup string // RUSTUP_HOME (~/.rustup): the toolchains cargo's proxy runs
}

// findHostCaches looks for the download caches of the host's toolchains,
// as cadre's own environment (getenv) places them. Go's is asked of the go
// command found on PATH; the others are where their tools put them.
func findHostCaches(ctx context.Context, getenv func(string) string) hostCaches {
	home := getenv("HOME")
	if !filepath.IsAbs(home) || filepath.Clean(home) == "/" {
		home = ""
	}
	// dir is the directory the variable env names, else def under the
	// home; "" when it does not exist.
	dir := func(env, def string) string {
		p := ""
		if env != "" && filepath.IsAbs(getenv(env)) {
			p = getenv(env)
		} else if home != "" {
			p = filepath.Join(home, def)
		}
		if p == "" || !isDir(p) {
			return ""
		}
		return p
	}
	h := hostCaches{
		cargo:  dir("CARGO_HOME", ".cargo"),
		rustup: dir("RUSTUP_HOME", ".rustup"),
		maven:  dir("", ".m2/repository"),
	}
	if g := dir("GRADLE_USER_HOME", ".gradle"); g != "" && isDir(filepath.Join(g, "caches")) {
		h.gradle = filepath.Join(g, "caches")
	}
	if h.cargo != "" && !isDir(filepath.Join(h.cargo, "registry")) {
		h.cargo = ""
	}
	if m := goModCache(ctx, getenv); filepath.IsAbs(m) && isDir(m) {
		h.goMod = m
	}
	return h
}

// goModCache is `go env GOMODCACHE` of the go command on the host's PATH,
// "" without one.
func goModCache(ctx context.Context, getenv func(string) string) string {
	goCmd, ok := proc.LookPath("go", getenv("PATH"))
	if !ok {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCmd, "env", "GOMODCACHE")
	cmd.Env = os.Environ()
	for _, k := range []string{"PATH", "HOME", "GOPATH", "GOMODCACHE", "GOENV"} {
		cmd.Env = append(cmd.Env, k+"="+getenv(k))
	}
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// Build cache directories inside Policy.BuildCache.
const (
	goBuildDir = "go-build"
	goModDir   = "go-mod"
	npmDir     = "npm"
	pipDir     = "pip"
	cargoDir   = "cargo"
	mavenDir   = "m2"
	gradleDir  = "gradle"
	extraDir   = "extra"
)

// canDownload says whether a step may reach a package registry: a
// toolchain then gets a writable download cache of its own, fed first from
// the host's; otherwise it reads the host's in place, offline.
func (p *Policy) canDownload() bool {
	return p.Network == NetAllow || (p.Network == NetModelOnly && len(p.AllowHosts) > 0)
}

// mountCaches gives the step the host's download caches read-only and its
// build caches writable under dir (the item's build cache directory), and
// sets the variables that point the toolchains at them. home is the home
// directory's path inside the sandbox; env is the agent's environment.
func (p *Policy) mountCaches(out *Prepared, dir, home string, env []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sandbox: build caches: %w", err)
	}
	sb, h, set := out.Sandbox, p.host, out.Env
	sb.Write = append(sb.Write, dir)
	in := func(name string) string { return filepath.Join(dir, name) }
	download := p.canDownload()

	set["GOCACHE"] = in(goBuildDir)
	switch {
	case h.goMod != "" && !download:
		// Read in place: Go reads a complete module cache without
		// writing to it, and GOPROXY=off says plainly that nothing
		// missing can be fetched.
		sb.Expose = append(sb.Expose, h.goMod)
		set["GOMODCACHE"], set["GOPROXY"] = h.goMod, "off"
	default:
		set["GOMODCACHE"] = in(goModDir)
		set["GOFLAGS"] = strings.TrimSpace(envGet(env, "GOFLAGS") + " -modcacherw") // removable without chmod
		switch {
		case h.goMod != "":
			// The host's cache first, as a module proxy on disk: what it
			// holds is copied, not downloaded.
			sb.Expose = append(sb.Expose, h.goMod)
			set["GOPROXY"] = "file://" + filepath.ToSlash(filepath.Join(h.goMod, "cache", "download")) + ",https://proxy.golang.org,direct"
		case !download:
			set["GOPROXY"] = "off"
		}
	}

	// npm and pip cannot use a read-only cache (npm finds nothing in one;
	// pip turns it off), so theirs is the step's build cache directory.
	set["npm_config_cache"] = in(npmDir)
	set["PIP_CACHE_DIR"] = in(pipDir)

	set["CARGO_HOME"] = in(cargoDir)
	if h.cargo != "" && !download {
		// Cargo works from a read-only registry it finds complete, and
		// keeps its lock in CARGO_HOME, which stays writable.
		for _, sub := range []string{"registry", "git"} {
			if src := filepath.Join(h.cargo, sub); isDir(src) {
				sb.Binds = append(sb.Binds, proc.Bind{Src: src, Dest: filepath.Join(in(cargoDir), sub), ReadOnly: true})
			}
		}
		if err := os.MkdirAll(in(cargoDir), 0o755); err != nil {
			return fmt.Errorf("sandbox: build caches: %w", err)
		}
		set["CARGO_NET_OFFLINE"] = "true"
	}
	if h.rustup != "" {
		sb.Expose = append(sb.Expose, h.rustup)
		set["RUSTUP_HOME"] = h.rustup
	}

	// Maven reads its host repository as a read-only tail (Maven 3.9+) and
	// writes what it adds to the step's.
	opts := envGet(env, "MAVEN_OPTS") + " -Dmaven.repo.local=" + in(mavenDir)
	if h.maven != "" {
		sb.Expose = append(sb.Expose, h.maven)
		opts += " -Dmaven.repo.local.tail=" + h.maven
	}
	set["MAVEN_OPTS"] = strings.TrimSpace(opts)

	// Gradle reads a read-only dependency cache beside its own home.
	set["GRADLE_USER_HOME"] = in(gradleDir)
	if h.gradle != "" {
		sb.Expose = append(sb.Expose, h.gradle)
		set["GRADLE_RO_DEP_CACHE"] = h.gradle
	}

	for _, c := range p.Caches {
		path, ok := c.at(home)
		if !ok {
			continue
		}
		if !c.Write {
			sb.Expose = append(sb.Expose, path)
			continue
		}
		src := in(filepath.Join(extraDir, c.dirName()))
		if err := os.MkdirAll(src, 0o755); err != nil {
			return fmt.Errorf("sandbox: build caches: %w", err)
		}
		if !inside(path, home) && !inside(path, "/tmp") && !isDir(path) {
			// bubblewrap makes a mount point only in the fresh home and
			// /tmp; elsewhere the host's read-only root would refuse it.
			return fmt.Errorf("sandbox.caches: %s:rw: no such directory here, and outside the home and /tmp the sandbox cannot make one; create it", c.Path)
		}
		sb.Binds = append(sb.Binds, proc.Bind{Src: src, Dest: path})
	}
	return nil
}

// at is where the cache lies for a home directory at home; false for a
// path under the home when there is none.
func (c Cache) at(home string) (string, bool) {
	rel, ok := strings.CutPrefix(c.Path, "~/")
	if !ok {
		return c.Path, true
	}
	if !filepath.IsAbs(home) || filepath.Clean(home) == "/" {
		return "", false
	}
	return filepath.Join(home, rel), true
}

// dirName names the cache's writable directory: readable, and distinct
// for distinct paths.
func (c Cache) dirName() string {
	sum := sha256.Sum256([]byte(c.Path))
	return filepath.Base(c.Path) + "-" + hex.EncodeToString(sum[:4])
}

// Describe lists, for cadre runners check, the host's download caches a
// step sees read-only and how build caches are kept.
func (p *Policy) Describe() []string {
	var out []string
	h := p.host
	for _, c := range []struct{ what, path string }{
		{"Go modules", h.goMod}, {"cargo registry", h.cargo}, {"Maven repository", h.maven},
		{"Gradle caches", h.gradle}, {"rustup toolchains", h.rustup},
	} {
		if c.path != "" {
			out = append(out, fmt.Sprintf("%s %s (read-only)", c.what, c.path))
		}
	}
	for _, c := range p.Caches {
		if c.Write {
			out = append(out, c.Path+" (writable, kept with the build caches; sandbox.caches)")
		} else {
			out = append(out, c.Path+" (read-only; sandbox.caches)")
		}
	}
	return out
}
