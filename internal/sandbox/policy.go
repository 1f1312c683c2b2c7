// Package sandbox turns cadre.yaml's sandbox section into the confinement
// of one agent step: the bubblewrap mounts of proc.Sandbox (the worktree
// and step directories writable, git metadata read-only, a fresh home with
// only the runner's own files, the host's download caches read-only and
// the item's build caches writable), and for network: model-only a proxy on a
// Unix socket that lets through only the runner's model endpoints and
// sandbox.allow_hosts, bridged into the agent's network namespace by a
// helper (cadre's own binary, see RunBridge).
package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cadre-dev/cadre/internal/proc"
)

// Modes and networks of cadre.yaml's sandbox section.
const (
	ModeNone  = "none"
	ModeBwrap = "bwrap"
	// ModeAuto, the default, is bwrap where it works here and none
	// otherwise: asked for by no one, so its absence is a warning, not
	// a refusal.
	ModeAuto = "auto"

	NetAllow     = "allow"
	NetDeny      = "deny"
	NetModelOnly = "model-only"
)

// BridgeCommand is the hidden cadre subcommand that runs RunBridge.
const BridgeCommand = "__sandbox-bridge"

// Policy is a run's confinement. A nil *Policy means none.
type Policy struct {
	Network string // NetAllow, NetDeny or NetModelOnly
	// Untrusted is the network of untrusted items' steps (see ForItem).
	Untrusted  string
	AllowHosts []string // host or host:port reachable under NetModelOnly
	Bwrap      string   // the bubblewrap program
	// Helper is cadre's own executable, run inside the sandbox as the
	// network bridge under NetModelOnly.
	Helper string
	// Warn, when set, is told of every connection the proxy refused, with
	// the host:port asked for.
	Warn func(host string)
	// Caches are sandbox.caches: more host paths the agents see.
	Caches []Cache
	// BuildCache is the directory that keeps the item's build caches
	// across its steps (see ForItem); empty, each step gets its own,
	// removed after it.
	BuildCache string
	// NoHostSockets covers the host's /run and /var/run, where its Unix
	// sockets are (Docker's, dbus's, databases'), with empty file systems,
	// as the host's /tmp always is: an untrusted item's steps connect to
	// none of them (see ForItem). Programs on PATH there, and the
	// resolver's configuration, stay visible read-only.
	NoHostSockets bool
	host          hostCaches
}

// Settings are cadre.yaml's sandbox settings as New takes them.
type Settings struct {
	Network    string // the network of trusted items' steps
	Untrusted  string // that of untrusted items' steps; empty: Network
	AllowHosts []string
	Caches     []string // sandbox.caches entries, PATH or PATH:rw
}

// New checks that the sandbox can work here: bubblewrap is found on the
// PATH of getenv and runs a trivial command with each network setting
// asked for. It also finds the host's download caches, which steps see
// read-only. It is called once per run, before anything starts; its error
// wraps proc.ErrNoSandbox, and the run must then not start (never a
// fallback).
func New(ctx context.Context, s Settings, getenv func(string) string) (*Policy, error) {
	bw, err := proc.FindBwrap(getenv("PATH"))
	if err != nil {
		return nil, err
	}
	if s.Untrusted == "" {
		s.Untrusted = s.Network
	}
	p := &Policy{Network: s.Network, Untrusted: s.Untrusted, AllowHosts: s.AllowHosts, Bwrap: bw}
	for _, e := range s.Caches {
		c, err := ParseCache(e)
		if err != nil {
			return nil, fmt.Errorf("sandbox.caches: %w", err)
		}
		p.Caches = append(p.Caches, c)
	}
	if s.Network == NetModelOnly || s.Untrusted == NetModelOnly {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("%w: network model-only needs cadre's own executable as its bridge: %w", proc.ErrNoSandbox, err)
		}
		p.Helper = exe
	}
	for _, network := range slices.Compact([]string{s.Network, s.Untrusted}) {
		if err := proc.ProbeSandbox(ctx, proc.Sandbox{Bwrap: bw, Net: network == NetAllow}); err != nil {
			return nil, err
		}
	}
	p.host = findHostCaches(ctx, getenv)
	return p, nil
}

// ForItem is the policy of one item's steps: an untrusted item's steps get
// the untrusted network and no host Unix socket (NoHostSockets), and the
// item's build caches are kept in dir (the repository's for trusted
// items, the item's own for untrusted ones).
func (p *Policy) ForItem(trusted bool, dir string) *Policy {
	q := *p
	if !trusted {
		if p.Untrusted != "" {
			q.Network = p.Untrusted
		}
		q.NoHostSockets = true
	}
	q.BuildCache = dir
	return &q
}

// hostSocketDirs are where a host keeps its Unix sockets, covered for
// untrusted items (NoHostSockets); its /tmp is covered for every step.
var hostSocketDirs = []string{"/run", "/var/run"}

// socketDirs are the directories hostSocketDirs name, where they lead
// (/var/run is most often a link to /run), once each; those missing here
// are left out.
func socketDirs() []string {
	var out []string
	for _, d := range hostSocketDirs {
		real, err := filepath.EvalSymlinks(d)
		if err != nil || real == "/" {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() || slices.Contains(out, real) {
			continue
		}
		out = append(out, real)
	}
	return out
}

// resolvConf is where the resolver's configuration lies, which a host
// running systemd-resolved keeps under /run: bound back where /run is
// covered, so names still resolve with the host's network.
const resolvConf = "/etc/resolv.conf"

// Step is what one agent step's confinement depends on.
type Step struct {
	Dir string // the working tree, writable except its git metadata
	// Writable are further directories the agent writes: that of its
	// output file.
	Writable []string
	// Readable are directories it reads that the sandbox could hide:
	// that of its context file.
	Readable []string
	// HomeFiles are paths relative to the user's home copied into the
	// step's fresh home: the runner's own configuration and credentials.
	HomeFiles []string
	// Hosts are the runner's model endpoints (host:port) for model-only.
	Hosts []string
	// Env is the agent's environment; its HOME and PATH say where the
	// home is and which program directories must stay visible, and its
	// *_BASE_URL variables name model endpoints too.
	Env []string
}

// Prepared is one step's sandbox, ready for proc.Spec.Sandbox, with the
// variables to add to the agent's environment. Close removes the step's
// home and stops its proxy.
type Prepared struct {
	Sandbox *proc.Sandbox
	Env     map[string]string
	closers []func()
}

// Close releases what Prepare set up.
func (p *Prepared) Close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
}

// Prepare builds the sandbox of one step: a fresh home, the mounts, the
// caches, and under model-only the proxy and its bridge.
func (p *Policy) Prepare(ctx context.Context, st Step) (*Prepared, error) {
	out := &Prepared{Env: map[string]string{}}
	sb := &proc.Sandbox{Bwrap: p.Bwrap, Net: p.Network == NetAllow}
	out.Sandbox = sb
	if st.Dir != "" {
		dir, err := filepath.Abs(st.Dir)
		if err != nil {
			return nil, fmt.Errorf("sandbox: working tree: %w", err)
		}
		sb.Write = append(sb.Write, dir)
		sb.ReadOnly = append(sb.ReadOnly, gitPaths(dir)...)
	}
	for _, d := range st.Writable {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox: step directory: %w", err)
		}
		sb.Write = append(sb.Write, d)
	}
	for _, d := range st.Readable {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("sandbox: step directory: %w", err)
		}
	}
	hostHome := envGet(st.Env, "HOME")
	if err := p.makeHome(out, hostHome, st.HomeFiles); err != nil {
		return nil, err
	}
	var covered []string
	if p.NoHostSockets {
		covered = socketDirs()
		sb.Tmpfs = covered
		if real, err := filepath.EvalSymlinks(resolvConf); err == nil && under(real, covered) {
			sb.Expose = append(sb.Expose, real)
		}
	}
	sb.Expose = append(append(sb.Expose, hiddenPath(envGet(st.Env, "PATH"), hostHome, covered)...), st.Readable...)
	sb.Expose = append(sb.Expose, managerRoots(envGet(st.Env, "PATH"), hostHome, func(k string) string { return envGet(st.Env, k) })...)
	caches := p.BuildCache
	if caches == "" {
		tmp, err := os.MkdirTemp("", "cadre-cache-")
		if err != nil {
			out.Close()
			return nil, fmt.Errorf("sandbox: build caches: %w", err)
		}
		out.closers = append(out.closers, func() { os.RemoveAll(tmp) })
		caches = tmp
	}
	caches, err := filepath.Abs(caches)
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("sandbox: build caches: %w", err)
	}
	if err := p.mountCaches(out, caches, sb.HomePath, st.Env); err != nil {
		out.Close()
		return nil, err
	}
	// A step with nothing it may reach (a project command with no
	// allow_hosts) is as confined without the proxy, and its bridge is
	// the costliest part of a confined start.
	if hosts := modelHosts(st, p.AllowHosts); p.Network == NetModelOnly && len(hosts) > 0 {
		if err := p.startProxy(out, hosts); err != nil {
			out.Close()
			return nil, err
		}
	}
	return out, nil
}

// makeHome gives the step a fresh home over hostHome: with nothing to copy
// into it, an empty one of the sandbox's own; else a directory made here,
// holding the files copied, removed by Close. Where there is no usable home
// to hide, the fresh one is the home, in the step's environment too.
func (p *Policy) makeHome(out *Prepared, hostHome string, files []string) error {
	usable := filepath.IsAbs(hostHome) && filepath.Clean(hostHome) != "/"
	sb := out.Sandbox
	if len(files) == 0 && usable {
		sb.HomePath = hostHome
		return nil
	}
	home, err := os.MkdirTemp("", "cadre-home-")
	if err != nil {
		return fmt.Errorf("sandbox: home: %w", err)
	}
	out.closers = append(out.closers, func() { os.RemoveAll(home) })
	if err := copyHome(hostHome, home, files); err != nil {
		out.Close()
		return err
	}
	sb.Home, sb.HomePath = home, hostHome
	if !usable {
		sb.HomePath = home
		out.Env["HOME"] = home
	}
	return nil
}

// gitPaths are the git metadata of the working tree dir, kept read-only:
// its .git (a directory, or for a worktree a file naming its directory
// under the repository's .git/worktrees) and the repository's git
// directory that a worktree's shares. The agent may read history; only
// cadre commits.
func gitPaths(dir string) []string {
	dotGit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotGit)
	if err != nil {
		return nil
	}
	paths := []string{dotGit}
	if fi.IsDir() {
		return paths
	}
	b, err := os.ReadFile(dotGit)
	if err != nil {
		return paths
	}
	gitDir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return paths
	}
	gitDir = strings.TrimSpace(gitDir)
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(dir, gitDir)
	}
	common := gitDir
	if c, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		common = strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
	}
	paths = append(paths, filepath.Clean(common))
	if !inside(gitDir, common) {
		paths = append(paths, gitDir)
	}
	return paths
}

// hiddenPath lists the directories of pathList that the sandbox's fresh
// /tmp or home, or the covered directories, would hide, so the programs
// there stay reachable (read-only).
func hiddenPath(pathList, home string, covered []string) []string {
	var out []string
	for _, d := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(d) {
			continue
		}
		if inside(d, "/tmp") || (filepath.IsAbs(home) && filepath.Clean(home) != "/" && inside(d, home)) || under(d, covered) {
			out = append(out, d)
		}
	}
	return out
}

// under reports whether path, or where it leads, lies inside one of dirs.
func under(path string, dirs []string) bool {
	if len(dirs) == 0 {
		return false
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path
	}
	for _, d := range dirs {
		if inside(path, d) || inside(real, d) {
			return true
		}
	}
	return false
}

func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// envGet is the last value of key in env.
func envGet(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// Check runs a trivial command in a step's full sandbox as the policy
// sets it up (fresh home, mounts, caches, and under model-only the proxy
// and its bridge), as trusted and as untrusted items get it, in a
// throwaway working tree, for cadre runners check.
func (p *Policy) Check(ctx context.Context, env []string) error {
	for _, trusted := range []bool{true, false} {
		q := p.ForItem(trusted, p.BuildCache)
		if q.Network == "" {
			continue
		}
		if err := q.check(ctx, env); err != nil {
			return fmt.Errorf("network %s: %w", q.Network, err)
		}
	}
	return nil
}

func (p *Policy) check(ctx context.Context, env []string) error {
	dir, err := os.MkdirTemp("", "cadre-check-")
	if err != nil {
		return fmt.Errorf("sandbox check: %w", err)
	}
	defer os.RemoveAll(dir)
	// A model endpoint, as an agent step has: under model-only the proxy
	// and its bridge start (nothing is dialled).
	prep, err := p.Prepare(ctx, Step{Dir: dir, Env: env, Hosts: []string{"https://model.invalid"}})
	if err != nil {
		return err
	}
	defer prep.Close()
	var log strings.Builder
	res, err := proc.Run(ctx, proc.Spec{Path: "true", Dir: dir, Env: env, Log: &log, Sandbox: prep.Sandbox})
	if err != nil {
		return fmt.Errorf("sandbox check: %w", err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("sandbox check: true exited %d under bubblewrap: %s", res.ExitCode, strings.TrimSpace(res.StderrTail))
	}
	return nil
}
