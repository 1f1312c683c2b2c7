package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/ui/web"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// defaultServeAddr is loopback only: the board shows agents' output.
const defaultServeAddr = "127.0.0.1:7420"

// ServeOptions are the flags of cadre serve.
type ServeOptions struct {
	Addr      string
	TokenFile string
	Repos     []string // --repo; none: the repository around the current directory
}

// NewCmdServe builds cadre serve.
func NewCmdServe(f *Factory, runF func(context.Context, *Factory, *ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve [--repo DIR]... [--addr 127.0.0.1:7420] [--token-file FILE]",
		Short: "Web board of the repository's runs, live",
		Long: `Serve a web board of this repository's runs from its journal: a column per stage with a
card per item, moving live as the journal records events (Server-Sent Events); per item the
step timeline with each step's context file, output, log, signal, tokens and cost; per run the
cost by role, runner and model. It shows a run another cadre process is running, and runs
that ended.

--repo DIR (repeatable) shows these repositories instead, each from its own journal: the page
gets a repository picker next to the run picker. Each DIR must be in a git repository where
cadre has run (it has .cadre/cadre.db). A run started in any of them shows up on the board.

The buttons (approve or reject a paused item, stop the run) need the token printed at start
(open the printed link, or paste it into the page), or the one in --token-file (created with
a new token when the file does not exist). Approving an item of a run no process runs
resumes that run here, in this process; approving one of a run another process runs records
the answer, and this process resumes the run when that one exits paused.

The board listens on 127.0.0.1 unless --addr says otherwise; it answers only requests
addressed to localhost or an IP address. cadre run --serve shows the same board from the
process running the run.

EXIT STATUS
  0    stopped (Ctrl-C)
  1    the board failed (the address is taken, the journal is unreadable)
  2    usage or config error (a --repo that is no git repository or has no journal)`,
		Example: `  cadre serve                               # http://127.0.0.1:7420/#token=…
  cadre serve --addr 127.0.0.1:8080
  cadre serve --repo ~/src/api --repo ~/src/web   # one board for both repositories
  cadre serve --token-file ~/.config/cadre/token  # a token that survives restarts`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runServe(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Addr, "addr", defaultServeAddr, "`HOST:PORT` to listen on")
	cmd.Flags().StringVar(&opts.TokenFile, "token-file", "", "read the action token from `FILE` (a new one is written there if it does not exist)")
	cmd.Flags().StringArrayVar(&opts.Repos, "repo", nil, "show the repository in `DIR` (repeatable; default: the one around the current directory)")
	return cmd
}

func runServe(ctx context.Context, f *Factory, opts *ServeOptions) error {
	wss, err := f.serveWorkspaces(ctx, opts.Repos)
	if err != nil {
		return err
	}
	var repos []web.Repo
	var acts []*boardActions
	for _, ws := range wss {
		st, err := openStore(ctx, ws.root)
		if err != nil {
			return fmt.Errorf("open the journal of %s: %w", ws.root, err)
		}
		defer st.Close()
		a := newBoardActions(ctx, f, ws, st, true)
		acts = append(acts, a)
		repos = append(repos, f.boardRepo(ws, st, a))
	}
	b, err := f.startBoard(ctx, repos, opts.Addr, opts.TokenFile)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return b.serve(gctx) })
	for _, a := range acts {
		g.Go(func() error { return a.watch(gctx) })
	}
	err = g.Wait()
	for _, a := range acts {
		a.wait() // resumed runs end interrupted (resumable) at Ctrl-C
	}
	if err != nil {
		return err
	}
	return nil
}

// serveWorkspaces are the repositories cadre serve shows: those of dirs,
// each once, or the one around the current directory.
func (f *Factory) serveWorkspaces(ctx context.Context, dirs []string) ([]workspaceCtx, error) {
	if len(dirs) == 0 {
		ws, err := f.workspace(ctx)
		if err != nil {
			return nil, err
		}
		return []workspaceCtx{ws}, nil
	}
	cwd, err := f.Dir()
	if err != nil {
		return nil, err
	}
	var out []workspaceCtx
	seen := map[string]bool{}
	for _, dir := range dirs {
		abs := dir
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(cwd, dir)
		}
		// One line naming the DIR the user gave, whatever went wrong.
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, usageErr(fmt.Errorf("--repo %s: no such directory", dir))
		}
		root, err := app.Root(ctx, abs)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--repo %s: not a git repository", dir))
		}
		if !app.HasJournal(root) {
			return nil, usageErr(fmt.Errorf("--repo %s: no cadre journal (%s); run cadre there first", dir, filepath.Join(root, workspace.StateDir, "cadre.db")))
		}
		if seen[root] {
			continue // twice the same journal would resume its runs twice
		}
		seen[root] = true
		cfg, err := app.LoadConfig(root, f.Getenv)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--repo %s: %w", dir, relPath(err, root)))
		}
		out = append(out, workspaceCtx{root: root, cfg: cfg})
	}
	return out, nil
}

// boardRepo is ws as the board shows it, masking its code host's tokens.
func (f *Factory) boardRepo(ws workspaceCtx, st *store.Store, acts web.Actions) web.Repo {
	red := app.Secrets(ws.cfg, nil, f.Getenv)
	r := web.Repo{Name: filepath.Base(ws.root), Dir: ws.root, Store: st, Actions: acts, Redact: red.String, PRs: f.newForge(ws)}
	if repo, err := workspace.Open(context.Background(), ws.root); err == nil {
		r.Changes = branchChanges{repo: repo, base: ws.cfg.BaseBranch}
	}
	return r
}

// branchChanges is what an item's branch changed, for the board's item
// page.
type branchChanges struct {
	repo *workspace.Repo
	base string
}

// maxDiff bounds the diff an item page carries.
const maxDiff = 512 << 10

func (b branchChanges) Changes(ctx context.Context, branch string) (string, []workspace.LogCommit, error) {
	return b.repo.BranchChanges(ctx, b.base, branch, maxDiff)
}

// board is a listening web board.
type board struct {
	srv *web.Server
	ln  net.Listener
	url string
}

func (b *board) serve(ctx context.Context) error { return b.srv.Serve(ctx, b.ln) }

// startBoard listens on addr and prints where the board of repos is.
func (f *Factory) startBoard(ctx context.Context, repos []web.Repo, addr, tokenFile string) (*board, error) {
	token, err := boardToken(tokenFile)
	if err != nil {
		return nil, usageErr(err)
	}
	srv, err := web.New(web.Options{Repos: repos, Token: token})
	if err != nil {
		return nil, usageErr(err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--addr %s: %w", addr, err))
	}
	url := "http://" + ln.Addr().String() + "/"
	if tokenFile != "" {
		fmt.Fprintf(f.IO.ErrOut, "cadre: board at %s (actions need the token in %s)\n", url, tokenFile)
	} else {
		fmt.Fprintf(f.IO.ErrOut, "cadre: board at %s#token=%s\n", url, token)
	}
	return &board{srv: srv, ln: ln, url: url}, nil
}

// boardToken reads the token in file, writing a new one there when the
// file does not exist; no file: a new token for this process.
func boardToken(file string) (string, error) {
	if file == "" {
		return web.NewToken(), nil
	}
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		token := web.NewToken()
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return "", fmt.Errorf("--token-file %s: %w", file, err)
		}
		if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("--token-file %s: %w", file, err)
		}
		return token, nil
	}
	if err != nil {
		return "", fmt.Errorf("--token-file %s: %w", file, err)
	}
	token := strings.TrimSpace(string(data))
	if len(token) < 16 {
		return "", fmt.Errorf("--token-file %s: the token must have at least 16 characters", file)
	}
	return token, nil
}

func stateDirOf(ws workspaceCtx) string { return filepath.Join(ws.root, workspace.StateDir) }
