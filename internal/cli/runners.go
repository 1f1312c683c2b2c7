package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// RunnersCheckOptions are the arguments of cadre runners check.
type RunnersCheckOptions struct {
	// Strict fails the command too when sandbox.mode bwrap cannot work.
	Strict bool
}

// NewCmdRunners builds cadre runners list|check.
func NewCmdRunners(f *Factory) *cobra.Command {
	list := func(cmd *cobra.Command, args []string) error { return listRunners(cmd.Context(), f) }
	cmd := &cobra.Command{
		Use:     "runners [list|check]",
		Short:   "List runner types and the runners configured in cadre.yaml, or check they can run",
		Long:    "Runners say HOW an agent is reached: an agent CLI, a model API, any command (exec) or a scenario (script)." + exitStatusSimple,
		Example: "  cadre runners list\n  cadre runners check",
		Args:    cobra.NoArgs,
		RunE:    list,
	}
	cmd.AddCommand(&cobra.Command{Use: "list", Short: "List runners", Args: cobra.NoArgs,
		Long: "List runner types and configured runner instances." + exitStatusSimple, Example: "  cadre runners list", RunE: list})

	opts := &RunnersCheckOptions{}
	types := f.runnerTypes()
	check := &cobra.Command{
		Use:   "check [--strict]",
		Short: "Check that each runner's CLI, API key or file is there",
		Long: `For every runner type and every runner configured in cadre.yaml, say whether it can run:
agent CLIs (` + typesOf(types, runner.TypeCLI) + `) are looked up on PATH and asked their
--version, and a missing one is shown with the command that installs it; model APIs
(` + typesOf(types, runner.TypeAPI) + `) need their API key variable where the vendor's URL wants one,
and are sent one short request for their model list at their base URL (GET /v1/models,
ollama: GET /api/tags) with that key: no answer within 3s, or a refusal, is missing;
exec runners show whether their command is found, script runners whether their scenario is.
USED marks the runners cadre.yaml names (runners, defaults.runner, roles.*.runner, and
selector.candidates when a runner is auto).
A line at the end says whether the sandbox works here, and so whether runs confine their agents:
it runs true under bubblewrap with cadre.yaml's sandbox settings (each network a run gives,
proxy and bridge included), and says which network trusted and untrusted items get; under
sandbox.mode auto (the default) it says whether runs get bwrap or none. Where bwrap works, the
next line lists the host's download caches agents see read-only.

STATUS is ready, missing (something to install or configure), or - (a type that only
works once configured, such as exec).

EXIT STATUS
  0  every runner marked USED is ready (or -)
  1  a runner marked USED is missing; with --strict also: sandbox.mode bwrap cannot work here
  2  usage or config error`,
		Example: `  cadre runners check
  cadre runners check --strict     # in CI: fail too when sandbox.mode bwrap cannot work here`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runRunnersCheck(cmd.Context(), f, opts) },
	}
	check.Flags().BoolVar(&opts.Strict, "strict", false, "exit 1 too when sandbox.mode bwrap cannot work here")
	cmd.AddCommand(check)
	return cmd
}

// typesOf lists the names of reg's types of kind k, in registration order.
func typesOf(reg *runner.Registry, k runner.TypeKind) string {
	var names []string
	for _, d := range reg.Descriptors() {
		if d.Kind == k {
			names = append(names, d.Type)
		}
	}
	return strings.Join(names, ", ")
}

func listRunners(ctx context.Context, f *Factory) error {
	reg := f.runnerTypes()
	fmt.Fprintln(f.IO.Out, "TYPES")
	for _, t := range reg.Types() {
		fmt.Fprintf(f.IO.Out, "  %s\n", t)
	}
	ws, err := f.workspace(ctx)
	if err != nil || len(ws.cfg.Runners) == 0 {
		return nil
	}
	fmt.Fprintln(f.IO.Out, "CONFIGURED (cadre.yaml)")
	for name, rc := range ws.cfg.Runners {
		detail := strings.TrimSpace(rc.Command + " " + strings.Join(rc.Args, " "))
		if rc.Scenario != "" {
			detail = "scenario " + rc.Scenario
		}
		fmt.Fprintf(f.IO.Out, "  %-16s type=%-8s %s\n", name, ws.cfg.RunnerType(name), detail)
	}
	return nil
}

// Runner check statuses.
const (
	statusReady   = "ready"
	statusMissing = "missing"
	statusNone    = "-"
)

// runnerCheck is one line of cadre runners check.
type runnerCheck struct {
	name, typ string
	used      bool
	status    string
	detail    string
}

// versionTimeout bounds `CLI --version`: a Node CLI starts in well under
// a second, and a hung one must not hang the check.
const versionTimeout = 10 * time.Second

func runRunnersCheck(ctx context.Context, f *Factory, opts *RunnersCheckOptions) error {
	var cfg config.Config
	root := ""
	if r, err := f.repoRoot(ctx); err == nil {
		ws, err := f.workspace(ctx)
		if err != nil {
			return err
		}
		root, cfg = r, ws.cfg
	} else if !errors.Is(err, workspace.ErrNotRepo) {
		return err
	}
	reg := f.runnerTypes()
	checks := planChecks(reg.Types(), cfg, root != "")

	var wg sync.WaitGroup
	for i := range checks {
		wg.Go(func() { checkRunner(ctx, f, &checks[i], cfg, root, reg) })
	}
	wg.Wait()

	out := f.IO.Out
	fmt.Fprintf(out, "%-16s %-10s %-4s %-8s %s\n", "RUNNER", "TYPE", "USED", "STATUS", "DETAIL")
	var missing []string
	for _, c := range checks {
		used := ""
		if c.used {
			used = "yes"
			if c.status == statusMissing {
				missing = append(missing, c.name)
			}
		}
		fmt.Fprintf(out, "%-16s %-10s %-4s %-8s %s\n", c.name, c.typ, used, c.status, c.detail)
	}
	sb := cfg.Sandbox
	if root == "" {
		sb = config.Default().Sandbox // what a run with no cadre.yaml gets
	}
	sandboxOK, sandboxLine := checkSandbox(ctx, sb, f.Getenv)
	fmt.Fprintf(out, "\n%s\n", sandboxLine)
	if root == "" {
		fmt.Fprintln(f.IO.ErrOut, "not in a git checkout: showing the built-in runner types only")
	}
	if !sandboxOK && cfg.Sandbox.Mode == sandbox.ModeBwrap && opts.Strict {
		return silentExit(1)
	}
	if len(missing) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "missing runners that cadre.yaml uses: %s\n", strings.Join(missing, ", "))
		return silentExit(1)
	}
	return nil
}

// checkSandbox says whether bubblewrap works here with cadre.yaml's
// sandbox settings (mode none: with the network allow), by running true in
// a step's full sandbox with each network a run would give, and so which
// confinement a run gets, with the caches its steps see; ok is false when
// it does not work.
func checkSandbox(ctx context.Context, c config.Sandbox, getenv func(string) string) (ok bool, line string) {
	settings, network := app.SandboxSettings(c), networkOf(c)
	if c.Mode == sandbox.ModeNone {
		settings, network = sandbox.Settings{Network: sandbox.NetAllow}, "network "+sandbox.NetAllow
	}
	env := proc.MinimalEnv(func(k string) (string, bool) { v := getenv(k); return v, v != "" }, nil, nil)
	p, err := sandbox.New(ctx, settings, getenv)
	if err == nil {
		err = p.Check(ctx, env)
	}
	switch {
	case err != nil && c.Mode == sandbox.ModeBwrap:
		return false, fmt.Sprintf("sandbox: bwrap (%s) asked for and NOT working here: %v; runs will refuse to start", network, err)
	case err != nil && c.Mode == sandbox.ModeAuto:
		return false, fmt.Sprintf("sandbox: none (sandbox.mode auto falls back): bwrap does not work here: %v; agents run unconfined", err)
	case err != nil:
		return false, fmt.Sprintf("sandbox: none (sandbox.mode); bwrap would not work here: %v", err)
	case c.Mode == sandbox.ModeNone:
		return true, "sandbox: none (sandbox.mode); bwrap works here: set sandbox.mode: bwrap or auto to confine agents"
	}
	line = fmt.Sprintf("sandbox: bwrap (%s) works here: agents run confined", network)
	if c.Mode == sandbox.ModeAuto {
		line = fmt.Sprintf("sandbox: bwrap (sandbox.mode auto; %s) works here: agents run confined", network)
	}
	caches := "none of the host's"
	if d := p.Describe(); len(d) > 0 {
		caches = strings.Join(d, ", ")
	}
	return true, line + "\nsandbox caches: " + caches + "; build caches kept in .cadre/cache (per repository for trusted items, per item for untrusted ones)"
}

// planChecks lists the runners to check: every registered type and every
// configured instance, by name, each marked when the configuration uses it.
func planChecks(types []string, cfg config.Config, inRepo bool) []runnerCheck {
	used := map[string]bool{}
	if inRepo {
		for name := range cfg.Runners {
			used[name] = true
		}
		// auto is the model selector, not a runner: the runners it
		// chooses from are the ones used.
		auto := false
		for _, r := range append([]string{cfg.Defaults.Runner}, roleRunners(cfg)...) {
			if r == config.Auto {
				auto = true
			} else if r != "" {
				used[r] = true
			}
		}
		if auto {
			for _, c := range cfg.Selector.Candidates {
				r, _, _ := strings.Cut(c, "/")
				used[r] = true
			}
		}
	}
	names := slices.Clone(types)
	for name := range used {
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	checks := make([]runnerCheck, 0, len(names))
	for _, name := range names {
		typ := name
		if inRepo {
			typ = cfg.RunnerType(name)
		}
		checks = append(checks, runnerCheck{name: name, typ: typ, used: used[name]})
	}
	return checks
}

func roleRunners(cfg config.Config) []string {
	var out []string
	for _, rc := range cfg.Roles {
		out = append(out, rc.Runner)
	}
	return out
}

// checkRunner fills in c's status and detail, checking it as its type's
// descriptor in reg says: an agent CLI by its program, a model API by its
// probe.
func checkRunner(ctx context.Context, f *Factory, c *runnerCheck, cfg config.Config, root string, reg *runner.Registry) {
	rc, configured := cfg.Runners[c.name]
	where := "runners." + c.name
	d, ok := reg.Describe(c.typ)
	if !ok {
		c.status = statusMissing
		c.detail = fmt.Sprintf("unknown runner type %q (known: %s): fix %s.type or the runner's name", c.typ, strings.Join(reg.Types(), ", "), where)
		return
	}
	switch d.Kind {
	case runner.TypeCLI:
		c.status, c.detail = checkAgentCLI(ctx, f, d, rc, root, where)
		return
	case runner.TypeAPI:
		c.status, c.detail = checkModelAPI(ctx, f, d, rc, where)
		return
	}
	switch {
	case rc.Command != "":
		if path, found := findProgram(rc.Command, f.Getenv("PATH"), root); found {
			c.status, c.detail = statusReady, "command "+path
		} else {
			c.status, c.detail = statusMissing, fmt.Sprintf("%s not found (%s.command): install it or fix the path", rc.Command, where)
		}
	case rc.Scenario != "":
		path := rc.Scenario
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if _, err := os.Stat(path); err == nil {
			c.status, c.detail = statusReady, "scenario "+rc.Scenario
		} else {
			c.status, c.detail = statusMissing, fmt.Sprintf("scenario %s not found (%s.scenario)", rc.Scenario, where)
		}
	case configured:
		c.status, c.detail = statusMissing, fmt.Sprintf("%s has neither command nor scenario: set the one its type %s needs", where, c.typ)
	case d.Kind == runner.TypeExec:
		c.status, c.detail = statusNone, fmt.Sprintf("runs any command once configured: runners.NAME: {type: %s, command: ./agent.sh}", d.Type)
	case d.Kind == runner.TypeScript:
		c.status, c.detail = statusNone, fmt.Sprintf("plays a scenario file once configured: runners.NAME: {type: %s, scenario: FILE}", d.Type)
	default:
		c.status, c.detail = statusNone, "nothing to check"
	}
}

// checkAgentCLI reports whether an agent CLI is installed: its program
// (runners.NAME.command, else the descriptor's) is found as the runner
// will find it and answers --version; a missing one is shown with the
// command that installs it.
func checkAgentCLI(ctx context.Context, f *Factory, d runner.Descriptor, rc config.RunnerConfig, root, where string) (status, detail string) {
	program, setting := d.Program, ""
	if rc.Command != "" {
		program, setting = rc.Command, " ("+where+".command)"
	}
	path, found := findProgram(program, f.Getenv("PATH"), root)
	if !found {
		return statusMissing, fmt.Sprintf("%s not found on PATH%s; install: %s", program, setting, d.Install)
	}
	version, err := programVersion(ctx, f, path)
	if err != nil {
		return statusMissing, fmt.Sprintf("%s: %v; reinstall: %s", path, err, d.Install)
	}
	return statusReady, fmt.Sprintf("%s (%s)", version, path)
}

// checkModelAPI reports whether a model-API runner can answer: its API key
// variable is set where its URL needs one, and its base URL answers the
// descriptor's probe, a short read-only request, with the key it would
// send. The key is needed where the descriptor says so (the vendor's own
// URL); another server gets it only if set.
func checkModelAPI(ctx context.Context, f *Factory, d runner.Descriptor, rc config.RunnerConfig, where string) (status, detail string) {
	url := rc.URL
	if url == "" {
		url = d.BaseURL
	}
	url = strings.TrimRight(url, "/")
	keyEnv := d.KeyEnv
	if len(rc.Env) > 0 && rc.Env[0] != "" {
		keyEnv = rc.Env[0]
	}
	model := ""
	if rc.Model != "" {
		model = ", model " + rc.Model
	}
	key := ""
	keyNote := ""
	if keyEnv != "" {
		key = f.Getenv(keyEnv)
		switch {
		case key != "":
			keyNote = ", " + keyEnv + " is set"
		case d.NeedsKey(url):
			return statusMissing, fmt.Sprintf("url %s, %s is not set: export your API key in it (or name another variable in %s.env)%s", url, keyEnv, where, model)
		default:
			keyNote = ", " + keyEnv + " not set (sent only when set)"
		}
	}
	probe, header := d.Probe(url, key)
	code, err := probeModelAPI(ctx, probe, header)
	switch {
	case err != nil:
		return statusMissing, fmt.Sprintf("url %s does not answer: %v; start the server or fix %s.url", url, err, where)
	case (code == http.StatusUnauthorized || code == http.StatusForbidden) && keyEnv != "":
		return statusMissing, fmt.Sprintf("url %s refused the key: GET %s: HTTP %d; check the API key in %s", url, probe, code, keyEnv)
	case code/100 != 2:
		return statusMissing, fmt.Sprintf("url %s: GET %s: HTTP %d; is it a %s server? fix %s.url", url, probe, code, d.Type, where)
	}
	return statusReady, "url " + url + keyNote + model
}

// probeTimeout bounds the request that checks a model API answers: a
// server that is up answers a model list at once, and a check must not
// hang on one that does not.
const probeTimeout = 3 * time.Second

// probeModelAPI sends GET url with header, as the runner would send its
// key, and returns the HTTP status; err is set when nothing answered in
// time.
func probeModelAPI(ctx context.Context, url string, header http.Header) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("probe %s: %w", url, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	return resp.StatusCode, nil
}

// findProgram resolves a command as the runner will: a path with a slash
// against the repository root, a bare name on pathList.
func findProgram(name, pathList, root string) (string, bool) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(root, name)
		}
		return name, isExecutable(name)
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, true
		}
	}
	return "", false
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// programVersion runs `path --version` in a minimal environment and returns
// the first line it prints.
func programVersion(ctx context.Context, f *Factory, path string) (string, error) {
	lookup := func(k string) (string, bool) {
		v := f.Getenv(k)
		return v, v != ""
	}
	res, err := proc.Run(ctx, proc.Spec{Path: path, Args: []string{"--version"}, Env: proc.MinimalEnv(lookup, nil, nil),
		Timeout: versionTimeout, Grace: time.Second, MaxStdout: 64 << 10})
	if err != nil {
		return "", fmt.Errorf("--version: %w", err)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("--version exited %d%s", res.ExitCode, tailNote(res.StderrTail))
	}
	for _, text := range []string{string(res.Stdout), res.StderrTail} {
		for line := range strings.Lines(text) {
			if line = strings.TrimSpace(line); line != "" {
				if len(line) > 80 {
					line = line[:80] + "…"
				}
				return line, nil
			}
		}
	}
	return "version unknown", nil
}

// tailNote is the last line of a stderr tail, for a one-line message.
func tailNote(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return ": " + s
}
