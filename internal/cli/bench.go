package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/agent"
	"github.com/cadre-dev/cadre/internal/bench"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// BenchOptions are the arguments of cadre bench.
type BenchOptions struct {
	Roles   []string
	Runners []string
	Repeat  int
	Judge   string // "" for the runner cadre.yaml gives the judge role
	JSON    bool
	New     bool // start a new benchmark even when one with these options is unfinished
}

// NewCmdBench builds cadre bench.
func NewCmdBench(f *Factory, runF func(context.Context, *Factory, *BenchOptions) error) *cobra.Command {
	opts := &BenchOptions{}
	cmd := &cobra.Command{
		Use:   "bench [ROLE...] [--runners a,b] [--repeat N] [--judge RUNNER] [--json] [--new]",
		Short: "Benchmark runners on each role's cases; results go to the score store",
		Long: `Run the benchmark cases of ROLEs (every role with a case when none is given) with each
runner of --runners, --repeat times, and print a leaderboard per role. Without --runners
the runners are selector.candidates' (the runners runner: auto chooses among), else
defaults.runner.

Cases are built in and read from the repository's .cadre/bench/*.yaml (docs/evaluation.md
gives the format). Each run of a case happens in a fresh git repository holding the case's
fixture. The work is checked by the gatekeeper (the role's requirements, the case's over
them, the case's commands); work that passes is scored by the judge against the case's
rubric. Every result is recorded in the score store (source and kind "bench"), which
runner: auto reads, and shown by cadre scores.

The leaderboard ranks runner/models by mean score (0-10, a failed gatekeeper counting 0),
then pass rate, then cost. It goes to stdout; --json prints it as JSON. Progress goes to
stderr: a bar on a terminal, otherwise one line per finished case.

A benchmark is journaled: run cadre bench again with the same roles, runners and repeat to
continue an interrupted one (only its unfinished cases run); --new starts afresh.
--judge names the judge's runner (default: roles.judge.runner, else defaults.runner).

EXIT STATUS
  0    every case was run and evaluated
  1    some cases could not be evaluated (the judge failed); run again to retry them
  2    usage, config or case file error (nothing was run)
  130  interrupted (run the same command again to continue)`,
		Example: `  cadre bench --runners claude,codex
  cadre bench executor architect --runners claude,gemini --repeat 3
  cadre bench --runners ollama-small,ollama-large --judge claude --json | jq '.rows[0]'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Roles = args
			for _, r := range opts.Runners {
				if strings.TrimSpace(r) == "" {
					return usageErr(errors.New("--runners: empty runner name"))
				}
			}
			if opts.Repeat < 1 {
				return usageErr(fmt.Errorf("--repeat %d: want 1 or more", opts.Repeat))
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runBench(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringSliceVar(&opts.Runners, "runners", nil, "runners to benchmark, comma-separated (default: selector.candidates, else defaults.runner)")
	cmd.Flags().IntVar(&opts.Repeat, "repeat", 1, "runs of each case per runner")
	cmd.Flags().StringVar(&opts.Judge, "judge", "", "runner of the judge (default: the judge role's runner in cadre.yaml)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the leaderboard as JSON on stdout")
	cmd.Flags().BoolVar(&opts.New, "new", false, "start a new benchmark instead of continuing an unfinished one")
	return cmd
}

// runBench runs the benchmark opts asks for, journaled so that an
// interrupted one continues where it stopped, and prints its leaderboard.
// Nothing runs unless the sandbox mode, the cases and every contestant are
// usable.
func runBench(ctx context.Context, f *Factory, opts *BenchOptions) error {
	ws, err := f.workspace(ctx)
	if err != nil {
		return err
	}
	if err := checkBenchSandbox(f.IO.ErrOut, ws.cfg); err != nil {
		return err
	}
	roleDir, cases, err := benchCases(ws.root, opts.Roles)
	if err != nil {
		return err
	}
	b := &bench.Bench{Runners: map[string]bench.Contestant{}, RoleDir: roleDir, Crash: f.Crash,
		CommandTimeout: time.Duration(ws.cfg.Defaults.Timeout)}
	judge, err := addContestants(b, ws, opts)
	if err != nil {
		return usageErr(err)
	}

	st, err := openStore(ctx, ws.root)
	if err != nil {
		return err
	}
	defer st.Close()
	b.Store = st
	bopts := bench.Options{Roles: opts.Roles, Runners: opts.Runners, Repeat: opts.Repeat, Judge: judge}
	run, err := bench.Open(ctx, st, ws.root, bopts, opts.New)
	if errors.Is(err, bench.ErrBusy) {
		return usageErr(err)
	}
	if err != nil {
		return err
	}
	sum, err := executeBench(ctx, f, b, run, cases, opts, judge)
	if err != nil {
		return err
	}
	return printBench(ctx, f, st, run, sum, opts.JSON)
}

// checkBenchSandbox refuses a sandbox asked for by name and warns that the
// default auto does not apply: the benchmark's agents run in throwaway
// work directories, not under the sandbox, and a sandbox asked for is
// never silently ignored.
func checkBenchSandbox(errOut io.Writer, cfg config.Config) error {
	switch cfg.Sandbox.Mode {
	case sandbox.ModeBwrap:
		return usageErr(fmt.Errorf("%s is bwrap, and cadre bench runs its agents unconfined (in throwaway work directories): run it with CADRE_SANDBOX_MODE=none to accept that", cfg.Where("sandbox.mode")))
	case sandbox.ModeAuto:
		fmt.Fprintln(errOut, "cadre: warning: cadre bench runs its agents unconfined, in throwaway work directories (sandbox.mode applies to runs)")
	}
	return nil
}

// benchCases loads the repository's roles and the cases of roles (every
// role's when none is named). roleDir is the repository's role directory,
// or "" when it has none and the agents use the built-in roles, parsed
// once.
func benchCases(root string, roles []string) (roleDir string, cases []bench.Case, err error) {
	roleDir = filepath.Join(root, workspace.StateDir, "roles")
	known, err := role.Load(roleDir)
	if err != nil {
		return "", nil, usageErr(relPath(err, root))
	}
	if _, err := os.Stat(roleDir); err != nil {
		roleDir = ""
	}
	exists := func(name string) bool { _, err := known.Get(name); return err == nil }
	cases, err = loadCases(root, roles, exists)
	if err != nil {
		return "", nil, usageErr(relPath(err, root))
	}
	return roleDir, cases, nil
}

// addContestants sets b's runners, the default ones when opts names none
// (opts.Runners is set to them), and its judge, and returns the judge's
// runner name.
func addContestants(b *bench.Bench, ws workspaceCtx, opts *BenchOptions) (string, error) {
	if len(opts.Runners) == 0 {
		opts.Runners = defaultBenchRunners(ws.cfg)
	}
	var err error
	for _, name := range opts.Runners {
		if b.Runners[name], err = contestant(ws.cfg, ws.root, name, ws.cfg.Runners[name].Model, "--runners"); err != nil {
			return "", err
		}
	}
	judge, judgeModel, from := benchJudge(ws.cfg, opts.Judge)
	if b.Judge, err = contestant(ws.cfg, ws.root, judge, judgeModel, from); err != nil {
		return "", err
	}
	return judge, nil
}

// benchJudge is the judge's runner and model: --judge's runner with its
// configured model, else the judge role's runner from cadre.yaml. from
// names where the runner came from, for errors.
func benchJudge(cfg config.Config, flag string) (name, model, from string) {
	if flag != "" {
		return flag, cfg.Runners[flag].Model, "--judge"
	}
	name, model = cfg.RoleRunner("judge")
	from = cfg.Where("roles.judge.runner")
	if cfg.Roles["judge"].Runner == "" {
		from = cfg.Where("defaults.runner")
	}
	return name, model, from
}

// executeBench runs the jobs of the benchmark run not yet done, showing
// progress on stderr. An interrupted benchmark's error says how to
// continue it.
func executeBench(ctx context.Context, f *Factory, b *bench.Bench, run bench.Run, cases []bench.Case, opts *BenchOptions, judge string) (bench.Summary, error) {
	jobs := bench.Jobs(cases, opts.Runners, opts.Repeat)
	p := newBenchProgress(f.IO.ErrOut, isTerminal(f.IO.ErrOut))
	b.Progress = p.report
	if run.Resumed {
		fmt.Fprintf(f.IO.ErrOut, "resuming bench %s: running its unfinished cases (--new starts afresh)\n", run.ID)
	} else {
		fmt.Fprintf(f.IO.ErrOut, "bench %s: %d cases × %d runners × %d = %d runs, judged by %s\n",
			run.ID, len(cases), len(opts.Runners), opts.Repeat, len(jobs), judge)
	}
	sum, err := b.Execute(ctx, run.ID, jobs)
	p.end()
	if run.Resumed {
		fmt.Fprintf(f.IO.ErrOut, "%d of %d runs were done before; ran %d now\n", sum.Skipped, sum.Total, sum.Ran)
	}
	if errors.Is(err, context.Canceled) {
		return sum, fmt.Errorf("bench %s interrupted: run the same cadre bench command again to continue: %w", run.ID, err)
	}
	return sum, err
}

// printBench prints the leaderboard of the benchmark run on stdout, as
// JSON when asJSON. Runs that could not be evaluated make it fail after
// printing, saying a rerun retries them.
func printBench(ctx context.Context, f *Factory, st *store.Store, run bench.Run, sum bench.Summary, asJSON bool) error {
	rows, err := bench.Leaderboard(ctx, st, run.ID)
	if err != nil {
		return err
	}
	if asJSON {
		if err := printBoardJSON(f.IO.Out, run, sum, rows); err != nil {
			return err
		}
	} else {
		printBoard(f.IO.Out, rows)
	}
	if sum.Failed > 0 {
		return fmt.Errorf("%d of %d runs could not be evaluated (see the lines above); run the same cadre bench command again to retry them", sum.Failed, sum.Total)
	}
	return nil
}

// defaultBenchRunners are the runners benchmarked without --runners: the
// model selector's candidates, whose choice the benchmark informs, else the
// default runner. A candidate's model is not kept: a runner is benchmarked
// with its configured model.
func defaultBenchRunners(cfg config.Config) []string {
	var out []string
	for _, c := range cfg.Selector.Candidates {
		name, _, _ := strings.Cut(strings.TrimSpace(c), "/")
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		out = []string{cfg.Defaults.Runner}
	}
	return out
}

// loadCases reads the built-in and the repository's cases of roles.
func loadCases(root string, roles []string, exists func(string) bool) ([]bench.Case, error) {
	builtin, err := bench.Builtin(exists)
	if err != nil {
		return nil, err
	}
	repo, err := bench.LoadDir(filepath.Join(root, workspace.StateDir, "bench"), exists)
	if err != nil {
		return nil, err
	}
	for _, r := range roles {
		if !exists(r) {
			return nil, fmt.Errorf("no role %q (cadre roles list shows them)", r)
		}
	}
	return bench.Select(bench.Merge(builtin, repo), roles)
}

// contestant builds the named runner from cadre.yaml through the public
// agent package, so the benchmark reaches runners exactly as a program
// using the library does. from names where the name came from, for errors.
func contestant(cfg config.Config, root, name, model, from string) (bench.Contestant, error) {
	if name == config.Auto {
		return bench.Contestant{}, fmt.Errorf("%s: runner auto cannot be benchmarked or judge; name a runner", from)
	}
	rc := cfg.Runners[name]
	ro := []agent.RunnerOption{agent.WithName(name), agent.WithBaseDir(root)}
	if rc.Command != "" {
		ro = append(ro, agent.WithCommand(rc.Command, rc.Args...))
	}
	var pass []string
	for _, k := range rc.Env {
		// The code host's credentials are cadre's alone, as in a run.
		if !slices.Contains(cfg.ForgeTokenVars(), k) {
			pass = append(pass, k)
		}
	}
	if len(rc.Env) > 0 && len(pass) == 0 {
		pass = []string{"CADRE_NO_EXTRA_ENV"} // only what is listed, not the runner's defaults
	}
	if len(pass) > 0 {
		ro = append(ro, agent.WithEnv(pass...))
	}
	if rc.URL != "" {
		ro = append(ro, agent.WithURL(rc.URL))
	}
	if rc.Model != "" {
		ro = append(ro, agent.WithRunnerModel(rc.Model))
	}
	if rc.Scenario != "" {
		ro = append(ro, agent.WithScenario(rc.Scenario))
	}
	r, err := agent.NewRunner(cfg.RunnerType(name), ro...)
	if errors.Is(err, runner.ErrUnknown) {
		if typ := cfg.RunnerType(name); typ != name {
			return bench.Contestant{}, fmt.Errorf("%s: runner %s: unknown runner type %q: fix runners.%s.type, one of %s",
				from, name, typ, name, strings.Join(agent.Types(), ", "))
		}
		return bench.Contestant{}, fmt.Errorf("%s: unknown runner %q: define it under runners: in cadre.yaml or use one of %s",
			from, name, strings.Join(agent.Types(), ", "))
	}
	if err != nil {
		return bench.Contestant{}, fmt.Errorf("%s: runner %s: %w", from, name, err)
	}
	return bench.Contestant{Runner: r, Model: model, Timeout: cfg.StepTimeout(name)}, nil
}

// isTerminal says whether w is a terminal, where a progress bar can
// redraw itself; anything else gets one line per case.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
