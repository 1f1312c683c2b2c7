package cli

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/workspace"
)

//go:embed demo
var demoFiles embed.FS

// DemoOptions are the arguments of cadre demo.
type DemoOptions struct {
	Dir  string
	JSON bool
}

// NewCmdDemo builds cadre demo.
func NewCmdDemo(f *Factory, runF func(context.Context, *Factory, *DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{}
	cmd := &cobra.Command{
		Use:   "demo [DIR]",
		Short: "Run a self-contained demo: a sample repository, three tasks, scripted agents",
		Long: `Create a small git repository in DIR (a new temporary directory by default) with three
task files, and run them through the stage pipeline with the deterministic script runner:
one task passes its audit, one fails its first audit and passes the second, one starts in
plan. Prints a summary table. Needs nothing but git.` + exitStatusRunning,
		Example: `  cadre demo
  cadre demo /tmp/cadre-demo && cd /tmp/cadre-demo && git log --oneline`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runDemo(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "JSON-lines events on stdout")
	return cmd
}

func runDemo(ctx context.Context, f *Factory, opts *DemoOptions) error {
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "cadre-demo-")
		if err != nil {
			return err
		}
		dir = d
	} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return usageErr(fmt.Errorf("demo directory %s is not empty: give a new or empty directory", dir))
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	repo, err := workspace.Init(ctx, dir, "main")
	if err != nil {
		return err
	}
	if err := copyDemo(dir); err != nil {
		return err
	}
	if err := repo.ExcludeState(ctx); err != nil {
		return err
	}
	if _, err := repo.CommitAll(ctx, "Sample repository for the cadre demo", workspace.Mark{}); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.ErrOut, "cadre demo: sample repository in %s\n", dir)
	cfg, err := config.Load(filepath.Join(dir, "cadre.yaml"), func(string) string { return "" })
	if err != nil {
		return err
	}
	ws := workspaceCtx{root: dir, cfg: cfg}
	var sum report.Summary
	err = f.withEngine(ctx, ws, opts.JSON, func(e *engine.Engine) error {
		var err error
		sum, err = e.Start(ctx, runspec.Options{InPlace: true})
		return err
	})
	if sum.Run != "" && !opts.JSON {
		fmt.Fprintf(f.IO.ErrOut, "\nsee what happened: cd %s && git log --oneline && cadre status\n", dir)
	}
	return finishRun(f, sum, err, opts.JSON)
}

// copyDemo writes the embedded sample repository into dir.
func copyDemo(dir string) error {
	return fs.WalkDir(demoFiles, "demo", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("demo", p)
		target := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := demoFiles.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}
