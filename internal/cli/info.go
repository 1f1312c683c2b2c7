package cli

import (
	"fmt"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// NewCmdVersion builds cadre version.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print cadre's version",
		Long:    "Print cadre's version and the Go toolchain it was built with." + exitStatusSimple,
		Example: "  cadre version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintf(f.IO.Out, "cadre %s (%s %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}

// NewCmdRoles builds cadre roles list|show.
func NewCmdRoles(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "roles [list|show NAME]",
		Short: "List roles, or show one role's prompt template",
		Long: `Roles say WHAT an agent does; each is a Markdown prompt template. Built-in roles can be
overridden, and new ones added, with .cadre/roles/NAME.md in the repository.` + exitStatusSimple,
		Example: `  cadre roles list
  cadre roles show auditor`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return listRoles(cmd, f) },
	}
	cmd.AddCommand(&cobra.Command{
		Use: "list", Short: "List roles", Args: cobra.NoArgs,
		Long:    "List every role with its description and source." + exitStatusSimple,
		Example: "  cadre roles list",
		RunE:    func(cmd *cobra.Command, args []string) error { return listRoles(cmd, f) },
	}, &cobra.Command{
		Use: "show NAME", Short: "Show a role's prompt template", Args: cobra.ExactArgs(1),
		Long:    "Print a role's description, output contract and prompt template." + exitStatusSimple,
		Example: "  cadre roles show coder",
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := loadRoles(cmd, f)
			if err != nil {
				return err
			}
			ro, err := reg.Get(args[0])
			if err != nil {
				return usageErr(err)
			}
			// Render with placeholders, so the user sees the prompt an agent
			// gets (with the shared SIGNAL BLOCK), not template markup.
			prompt, err := reg.Render(ro.Name, role.Data{Item: "<item>", Title: "<title>", TaskFile: "<task file>",
				WorkDir: "<working tree>", ContextPath: "<context file>", OutputPath: "<output file>", Automated: true})
			if err != nil {
				return usageErr(err)
			}
			fmt.Fprintf(f.IO.Out, "# %s (%s)\n%s\nOutput: %s\n\n%s", ro.Name, ro.Source, ro.Description, ro.Output, prompt)
			return nil
		},
	})
	return cmd
}

// loadRoles reads the built-in roles plus the repository's overrides when
// run inside a repository.
func loadRoles(cmd *cobra.Command, f *Factory) (*role.Registry, error) {
	root := ""
	if r, err := f.repoRoot(cmd.Context()); err == nil {
		root = r
	}
	return loadRolesAt(root)
}

// loadRolesAt reads the built-in roles and the repository's overrides.
func loadRolesAt(root string) (*role.Registry, error) {
	dir := ""
	if root != "" {
		dir = filepath.Join(root, workspace.StateDir, "roles")
	}
	reg, err := role.Load(dir)
	if err != nil {
		return nil, usageErr(err)
	}
	return reg, nil
}

func listRoles(cmd *cobra.Command, f *Factory) error {
	reg, err := loadRoles(cmd, f)
	if err != nil {
		return err
	}
	for _, ro := range reg.List() {
		src := ""
		if ro.Source != "built-in" {
			src = " [" + ro.Source + "]"
		}
		fmt.Fprintf(f.IO.Out, "%-24s %s%s\n", ro.Name, ro.Description, src)
	}
	return nil
}
