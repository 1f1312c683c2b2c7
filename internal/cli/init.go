package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/gitlab"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// InitOptions are the flags of cadre init.
type InitOptions struct {
	Force bool
}

// NewCmdInit builds cadre init.
func NewCmdInit(f *Factory, runF func(context.Context, *Factory, *InitOptions) error) *cobra.Command {
	opts := &InitOptions{}
	cmd := &cobra.Command{
		Use:   "init [--force]",
		Short: "Write a commented cadre.yaml for this repository",
		Long: `Write cadre.yaml at the repository root with the project's build, test and lint commands
(detected from go.mod, package.json, Cargo.toml, pyproject.toml or a Makefile), the agent CLI
found on PATH as the default runner, and the GitHub repository of the origin remote. An existing
cadre.yaml is kept unless --force.` + exitStatusSimple,
		Example: `  cadre init
  cadre init --force   # rewrite it`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runInit(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite an existing cadre.yaml")
	return cmd
}

func runInit(ctx context.Context, f *Factory, opts *InitOptions) error {
	root, err := f.repoRoot(ctx)
	if err != nil {
		return err
	}
	path := filepath.Join(root, "cadre.yaml")
	if _, err := os.Stat(path); err == nil && !opts.Force {
		return usageErr(fmt.Errorf("%s exists: edit it, or rewrite it with cadre init --force", "cadre.yaml"))
	}
	cmds := detectCommands(root)
	def, found := detectRunner(f.Getenv("PATH"), f.runnerTypes().Descriptors())
	origin := ""
	if r, err := workspace.Open(ctx, root); err == nil {
		if url, err := r.Git(ctx, "remote", "get-url", "origin"); err == nil {
			origin = strings.TrimSpace(url)
		}
	}
	host := hostOf(origin)
	base := "main"
	if r, err := workspace.Open(ctx, root); err == nil {
		if b, err := r.Git(ctx, "symbolic-ref", "--short", "HEAD"); err == nil && strings.TrimSpace(b) != "" {
			base = strings.TrimSpace(b)
		}
	}
	text := initYAML(filepath.Base(root), host, base, cmds, def, found)
	if _, err := config.Parse("cadre.yaml", []byte(text), nil); err != nil {
		return fmt.Errorf("generated configuration does not load: %w", err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return err
	}
	next := "check the commands, then cadre run --dry-run"
	if fi, err := os.Stat(filepath.Join(root, "tasks")); err != nil || !fi.IsDir() {
		// cadre run with no target runs the task files under tasks/; a
		// dry run now would only say there are none.
		next = "check the commands, write task files under tasks/ (or name issues to cadre run), then cadre run --dry-run"
	}
	fmt.Fprintf(f.IO.ErrOut, "cadre: wrote %s (default runner %s); %s\n", path, def, next)
	return nil
}

// detectCommands guesses install/build/test/lint from the build files.
func detectCommands(root string) config.Commands {
	has := func(name string) bool { _, err := os.Stat(filepath.Join(root, name)); return err == nil }
	switch {
	case has("go.mod"):
		return config.Commands{Build: "go build ./...", Test: "go test ./...", Lint: "go vet ./..."}
	case has("package.json"):
		c := config.Commands{Install: "npm install", Test: "npm test"}
		if has("package-lock.json") {
			c.Install = "npm ci"
		}
		var pkg struct {
			Scripts map[string]string `json:"scripts"`
		}
		data, _ := os.ReadFile(filepath.Join(root, "package.json"))
		if json.Unmarshal(data, &pkg) == nil {
			if _, ok := pkg.Scripts["build"]; ok {
				c.Build = "npm run build"
			}
			if _, ok := pkg.Scripts["lint"]; ok {
				c.Lint = "npm run lint"
			}
			if _, ok := pkg.Scripts["test"]; !ok {
				c.Test = ""
			}
		}
		return c
	case has("Cargo.toml"):
		return config.Commands{Build: "cargo build", Test: "cargo test", Lint: "cargo clippy"}
	case has("pyproject.toml"), has("setup.py"):
		return config.Commands{Test: "python -m pytest"}
	case has("Makefile"):
		return makeCommands(filepath.Join(root, "Makefile"))
	}
	return config.Commands{}
}

// makeTarget matches a rule's target at the start of a Makefile line, not
// a variable assignment (NAME := value).
var makeTarget = regexp.MustCompile(`(?m)^([A-Za-z0-9][A-Za-z0-9_.-]*)[ \t]*:(?:[^=]|$)`)

// makeCommands names the Makefile's own build, test and lint targets:
// "make test" where there is no test target would fail every check.
func makeCommands(path string) config.Commands {
	data, _ := os.ReadFile(path)
	targets := map[string]bool{}
	for _, m := range makeTarget.FindAllSubmatch(data, -1) {
		targets[string(m[1])] = true
	}
	pick := func(names ...string) string {
		for _, n := range names {
			if targets[n] {
				return "make " + n
			}
		}
		return ""
	}
	c := config.Commands{Build: pick("build", "all"), Test: pick("test", "check"), Lint: pick("lint")}
	if c.Build == "" {
		c.Build = "make" // the default target
	}
	return c
}

// detectRunner picks the first agent CLI among types (in the order of
// preference they are registered in, claude first) whose program is found
// on path; with none found, the first agent CLI (with none registered,
// the configuration's default runner).
func detectRunner(path string, types []runner.Descriptor) (string, []string) {
	var clis, found []string
	for _, d := range types {
		if d.Kind != runner.TypeCLI {
			continue
		}
		clis = append(clis, d.Type)
		for _, dir := range filepath.SplitList(path) {
			if fi, err := os.Stat(filepath.Join(dir, d.Program)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				found = append(found, d.Type)
				break
			}
		}
	}
	switch {
	case len(found) > 0:
		return found[0], found
	case len(clis) > 0:
		return clis[0], nil
	}
	return config.Default().Defaults.Runner, nil
}

// initHost is the code host cadre init found the origin remote on.
type initHost struct {
	gitlab bool
	url    string // a self-managed GitLab's address ("" on gitlab.com)
	repo   string // owner/repo, or the GitLab project's path
}

// hostOf reads the code host of the origin remote: GitHub (github.com or
// a host naming it), or GitLab (gitlab.com or a host naming it, which is
// then self-managed).
func hostOf(origin string) initHost {
	var cfg config.Config
	cfg.ResolveForge(origin)
	if cfg.Forge.Type != config.ForgeGitLab {
		h := initHost{}
		if o, n, ok := forge.RepoFromRemote(origin); ok {
			h.repo = o + "/" + n
		}
		return h
	}
	h := initHost{gitlab: true}
	if name := config.RemoteHost(origin); name != "gitlab.com" {
		h.url = "https://" + name
	}
	h.repo, _ = gitlab.ProjectFromRemote(origin)
	return h
}

func initYAML(project string, host initHost, base string, c config.Commands, def string, found []string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	var b strings.Builder
	fmt.Fprintf(&b, "# cadre configuration (written by cadre init). Every key is optional; see docs/config.md.\n")
	fmt.Fprintf(&b, "project: %s\n", q(project))
	switch {
	case host.gitlab:
		writeGitLab(&b, host)
	case host.repo != "":
		fmt.Fprintf(&b, "repository: %s            # GitHub issues and pull requests\n", host.repo)
	default:
		b.WriteString("# repository: owner/repo      # for GitHub issues; inferred from the origin remote\n")
	}
	fmt.Fprintf(&b, "base_branch: %s\ntasks_dir: tasks\n\n", q(base))
	b.WriteString("# The engine runs these itself (a baseline, then checks for regressions).\n")
	fmt.Fprintf(&b, "commands: {install: %s, build: %s, test: %s, lint: %s}\n\n", q(c.Install), q(c.Build), q(c.Test), q(c.Lint))
	if len(found) > 0 {
		fmt.Fprintf(&b, "# Agent CLIs found on PATH: %s.\n", strings.Join(found, ", "))
	} else {
		b.WriteString("# No agent CLI found on PATH; install one (cadre runners check says how).\n")
	}
	fmt.Fprintf(&b, "defaults: {runner: %s, workflow: auto, timeout: 20m}\n", def)
	b.WriteString("# roles:                       # per-role runner and model, e.g.\n#   code-reviewer: {runner: codex}\n\n")
	b.WriteString("limits: {parallel_issues: 3, parallel_agents: 3, budget_usd: 0}\n")
	return b.String()
}

// writeGitLab writes the forge and gitlab sections of a GitLab origin.
func writeGitLab(b *strings.Builder, host initHost) {
	if host.url != "" {
		fmt.Fprintf(b, "forge: {type: gitlab, url: %q}   # a self-managed GitLab, from the origin remote\n", host.url)
	} else {
		b.WriteString("forge: {type: gitlab}            # GitLab.com, from the origin remote\n")
	}
	if host.repo != "" {
		fmt.Fprintf(b, "repository: %s            # GitLab issues and merge requests\n", host.repo)
	}
	b.WriteString("# The token (api scope) is read from this variable; ca_file trusts a private CA.\n")
	b.WriteString("gitlab: {token_env: GITLAB_TOKEN}\n")
}
