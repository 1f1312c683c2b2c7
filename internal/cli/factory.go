// Package cli is cadre's command line: one file per command, each a
// NewCmdX(f) constructor, an options struct and a runX(ctx, opts) function,
// sharing the explicit dependencies of a Factory.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/builtin"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// IOStreams are a command's standard streams.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer // machine output (--json) and tables
	ErrOut io.Writer // human progress and errors
}

// Factory holds the dependencies every command draws on, built once.
type Factory struct {
	IO     IOStreams
	Getenv func(string) string
	Dir    func() (string, error) // current directory
	// Runners returns the registry of runner types, with cadre.yaml's price
	// overrides for runners that estimate cost.
	Runners func(prices map[string]config.Price) *runner.Registry
	// Crash is called at the engine's named crash points.
	Crash func(point string)
}

// runnerTypes is the registry of runner types without price overrides,
// for what their descriptors say: the built-in one when f names none.
func (f *Factory) runnerTypes() *runner.Registry {
	if f.Runners == nil {
		return builtin.Registry(nil)
	}
	return f.Runners(nil)
}

// NewFactory returns the production factory.
func NewFactory() *Factory {
	return &Factory{
		IO:      IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		Getenv:  os.Getenv,
		Dir:     os.Getwd,
		Runners: builtin.Registry,
		Crash:   crashFromEnv(os.Getenv("CADRE_CRASH_AT")),
	}
}

// crashFromEnv returns a crash hook for CADRE_CRASH_AT=POINT[:N]: the
// process SIGKILLs itself the Nth time (default 1st) it reaches POINT. It
// exists so tests can prove resume after a crash at any journal point.
func crashFromEnv(spec string) func(string) {
	if spec == "" {
		return func(string) {}
	}
	point, nth, _ := strings.Cut(spec, ":")
	n, err := strconv.Atoi(nth)
	if err != nil || n < 1 {
		n = 1
	}
	seen := 0
	return func(p string) {
		if p != point {
			return
		}
		if seen++; seen == n {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
}

// exitError carries an exit code with the error that caused it.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr marks err as a usage, config or pre-flight error (exit 2).
func usageErr(err error) error { return &exitError{code: 2, err: err} }

// silentExit ends the command with code and no further message.
type silentExit int

func (s silentExit) Error() string { return fmt.Sprintf("exit %d", int(s)) }

// workspaceCtx is what commands working on a repository need.
type workspaceCtx struct {
	root string
	cfg  config.Config
}

// repoRoot finds the repository around the current directory.
func (f *Factory) repoRoot(ctx context.Context) (string, error) {
	dir, err := f.Dir()
	if err != nil {
		return "", err
	}
	root, err := app.Root(ctx, dir)
	if err != nil {
		return "", usageErr(err)
	}
	return root, nil
}

// workspace loads the repository root and its cadre.yaml.
func (f *Factory) workspace(ctx context.Context) (workspaceCtx, error) {
	root, err := f.repoRoot(ctx)
	if err != nil {
		return workspaceCtx{}, err
	}
	cfg, err := app.LoadConfig(root, f.Getenv)
	if err != nil {
		return workspaceCtx{}, usageErr(relPath(err, root))
	}
	return workspaceCtx{root: root, cfg: cfg}, nil
}

// relPath shortens the repository's absolute paths in err's message to
// relative ones, keeping err in the chain for exit-code decisions.
func relPath(err error, root string) error {
	if err == nil {
		return nil
	}
	return &relError{msg: strings.ReplaceAll(err.Error(), root+string(filepath.Separator), ""), err: err}
}

type relError struct {
	msg string
	err error
}

func (e *relError) Error() string { return e.msg }
func (e *relError) Unwrap() error { return e.err }

// withEngine opens ws's journal, wires an engine printing events as asked,
// runs fn with it, and flushes and closes everything after.
func (f *Factory) withEngine(ctx context.Context, ws workspaceCtx, asJSON bool, fn func(*engine.Engine) error) error {
	st, err := openStore(ctx, ws.root)
	if err != nil {
		return err
	}
	defer st.Close()
	e, flush, err := f.newEngine(ctx, ws, st, f.eventSink(asJSON))
	if err != nil {
		return err
	}
	defer flush()
	return fn(e)
}

// loadWorkflows reads the built-in workflows and the repository's own
// (.cadre/workflows), checking their roles against roles.
func loadWorkflows(root string, roles *role.Registry) (*workflow.Registry, error) {
	flows, err := app.LoadWorkflows(root, roles)
	if err != nil {
		return nil, usageErr(relPath(err, root))
	}
	return flows, nil
}

func hasJournal(root string) bool { return app.HasJournal(root) }

func openStore(ctx context.Context, root string) (*store.Store, error) {
	return app.OpenStore(ctx, root)
}

// newEngine wires an engine for ws, publishing to sinks and to the journal.
// The returned function flushes the journal; call it before closing st.
func (f *Factory) newEngine(ctx context.Context, ws workspaceCtx, st *store.Store, sinks ...event.Sink) (*engine.Engine, func(), error) {
	e, flush, err := app.NewEngine(ctx, app.Workspace{Root: ws.root, Config: ws.cfg}, st,
		app.Options{Getenv: f.Getenv, Runners: f.Runners, Crash: f.Crash, Sinks: sinks, Warn: f.IO.ErrOut})
	if err != nil {
		return nil, nil, usageErr(relPath(err, ws.root))
	}
	return e, flush, nil
}

// newForge is ws's code host: GitHub or GitLab, as its forge says.
func (f *Factory) newForge(ws workspaceCtx) app.Host {
	return app.NewHost(app.Workspace{Root: ws.root, Config: ws.cfg}, f.Getenv)
}
