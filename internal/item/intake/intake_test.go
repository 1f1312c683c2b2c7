package intake

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// fakeForge serves issues by reference; its other calls are not used.
type fakeForge struct {
	codehost.Forge
	issues map[string]codehost.Issue
}

func (f fakeForge) Issue(_ context.Context, ref string) (codehost.Issue, error) {
	is, ok := f.issues[ref]
	if !ok {
		return codehost.Issue{}, errors.New("no such issue")
	}
	return is, nil
}

func loader(t *testing.T, tasks map[string]string) *Loader {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range tasks {
		if err := os.WriteFile(filepath.Join(root, "tasks", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flows, err := workflow.LoadDefs("", nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Loader{Root: root, StateDir: filepath.Join(root, ".cadre"), Config: config.Default(), Workflows: flows}
}

// TestLoadOrdersByDependencies: the tasks directory loads in dependency
// order, whatever the file order; a cycle is refused naming its tasks.
func TestLoadOrdersByDependencies(t *testing.T) {
	l := loader(t, map[string]string{
		"a.md": "---\nstage: code\ndepends_on: [b]\n---\n# A\n",
		"b.md": "---\nstage: code\n---\n# B\n",
	})
	tasks, err := l.Load(context.Background(), "r1", Want{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, task := range tasks {
		got = append(got, task.ID)
	}
	if strings.Join(got, ",") != "b,a" {
		t.Errorf("order %v, want b before a", got)
	}

	l = loader(t, map[string]string{
		"x.md": "---\nstage: code\ndepends_on: [y]\n---\n",
		"y.md": "---\nstage: code\ndepends_on: [x]\n---\n",
	})
	_, err = l.Load(context.Background(), "r1", Want{})
	if err == nil || !strings.Contains(err.Error(), "cycle: x → y → x") {
		t.Errorf("err = %v, want the cycle x → y → x", err)
	}
}

// TestLoadRefuses: each check names what is wrong and where.
func TestLoadRefuses(t *testing.T) {
	tests := []struct {
		name  string
		tasks map[string]string
		want  Want
		err   string
	}{
		{"unknown dependency", map[string]string{"a.md": "---\nstage: code\ndepends_on: [nope]\n---\n"}, Want{},
			`tasks/a.md: depends_on: no task "nope" (no tasks/nope.md)`},
		{"missing context", map[string]string{"a.md": "---\nstage: code\ncontexts: [docs/x.md]\n---\n"}, Want{},
			"tasks/a.md: contexts: no file docs/x.md in the repository"},
		{"context outside", map[string]string{"a.md": "---\nstage: code\ncontexts: [../x.md]\n---\n"}, Want{},
			`contexts: "../x.md" is not inside the repository`},
		{"unknown workflow", map[string]string{"a.md": "---\nstage: code\nworkflow: nope\n---\n"}, Want{},
			`tasks/a.md: workflow "nope" is unknown`},
		{"unknown --workflow", nil, Want{Workflow: "nope"}, "--workflow nope: unknown workflow"},
		{"unknown --column", nil, Want{Column: "nope"}, `--column "nope": unknown stage`},
		{"empty column", map[string]string{"a.md": "---\nstage: code\n---\n"}, Want{Column: "plan"}, "no task in stage plan"},
		{"no such target", nil, Want{Targets: []string{"missing.md"}}, "missing.md: no such task file or directory"},
		{"issue without forge", nil, Want{Targets: []string{"#12"}}, "#12: issue targets need access to the code host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loader(t, tt.tasks).Load(context.Background(), "r1", tt.want)
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

// TestIssueTask: an issue becomes a task file under the run's state,
// whose source is github and whose record gives the issue back; an
// issue the configuration refuses is not taken.
func TestIssueTask(t *testing.T) {
	l := loader(t, nil)
	is := codehost.Issue{Repo: "o/r", Number: 12, Title: "Fix\nit", Body: "the body", Author: "ann"}
	l.Forge = fakeForge{issues: map[string]codehost.Issue{"#12": is}}
	tasks, err := l.Load(context.Background(), "r1", Want{Targets: []string{"#12"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0].ID != "12" || tasks[0].Title != "Fix it" {
		t.Fatalf("tasks %+v, want 12 titled on one line", tasks)
	}
	if src := l.Source(tasks[0]); src != SourceGitHub {
		t.Errorf("source %q, want %q", src, SourceGitHub)
	}
	got, ok := IssueOf(store.Item{Source: SourceGitHub, Ref: tasks[0].Path})
	if !ok || got.Number != 12 || got.Body != "the body" {
		t.Errorf("IssueOf = %+v, %v; want issue 12 with its body", got, ok)
	}

	item := store.Item{Source: SourceGitHub, Ref: tasks[0].Path}
	if Stranger(item, []string{"ANN"}) || !Stranger(item, []string{"bob"}) || !Stranger(store.Item{Source: SourceGitHub, Ref: "gone.md"}, []string{"ann"}) {
		t.Error("an issue is from a stranger unless github.authors names its author, and when its record is gone")
	}
	if Stranger(store.Item{Source: SourceTask, Ref: tasks[0].Path}, nil) {
		t.Error("a task file of the repository is from a stranger")
	}

	l.Config.GitHub.Authors = []string{"bob"}
	_, err = l.Load(context.Background(), "r2", Want{Targets: []string{"#12"}})
	if err == nil || !strings.Contains(err.Error(), `issue #12: author "ann" is not in github.authors`) {
		t.Errorf("err = %v, want the author refused", err)
	}
}

// TestPromptTask: cadre do's prompt is a task file of its own, source
// prompt, alone when the run names nothing else.
func TestPromptTask(t *testing.T) {
	l := loader(t, map[string]string{"a.md": "---\nstage: code\n---\n"})
	tasks, err := l.Load(context.Background(), "r1", Want{Prompt: "add a  flag\nto the CLI"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || !strings.HasPrefix(tasks[0].ID, "do-") || tasks[0].Title != "add a flag to the CLI" {
		t.Fatalf("tasks %+v, want the prompt's task alone", tasks)
	}
	if src := l.Source(tasks[0]); src != SourcePrompt {
		t.Errorf("source %q, want %q", src, SourcePrompt)
	}
}

func TestIsIssueRef(t *testing.T) {
	for s, want := range map[string]bool{
		"42": true, "#42": true, "o/r#42": true, "https://github.com/o/r/issues/42": true,
		"acme/platform/widget#42": true, "https://gitlab.com/acme/widget/-/issues/3": true,
		"https://git.corp/acme/sub/widget/-/work_items/7": true,
		"tasks/a.md": false, "o/r": false, "#": false, "https://github.com/o/r/pull/42": false,
		"https://gitlab.com/acme/widget/-/merge_requests/3": false, "a/b/c": false,
		"PROJ-123": true, "ENG-42": true, "https://acme.atlassian.net/browse/PROJ-7": true,
		"https://acme.atlassian.net/jira/software/projects/PROJ/boards/1?selectedIssue=PROJ-7": true,
		"https://linear.app/acme/issue/ENG-42/fix-it":                                          true, "proj-123": false, "PROJ-": false, "tasks/PROJ-1.md": false,
	} {
		if got := IsIssueRef(s); got != want {
			t.Errorf("IsIssueRef(%q) = %v, want %v", s, got, want)
		}
	}
}

// On GitLab the allow-lists are gitlab:'s, not github:'s.
func TestRefuseReadsTheForgesSection(t *testing.T) {
	cfg := config.Default()
	cfg.Forge.Type = config.ForgeGitLab
	cfg.GitHub.Authors = []string{"alice"}
	cfg.GitLab.Authors, cfg.GitLab.RequireLabel = []string{"bob"}, "cadre"
	l := &Loader{Config: cfg}
	for _, tt := range []struct {
		is   codehost.Issue
		want string
	}{
		{codehost.Issue{Author: "alice", Labels: []string{"cadre"}}, `author "alice" is not in gitlab.authors`},
		{codehost.Issue{Author: "bob"}, `it lacks the label "cadre" that gitlab.require_label asks for`},
		{codehost.Issue{Author: "bob", Labels: []string{"Cadre"}}, ""},
	} {
		if got := l.Refuse(tt.is); got != tt.want {
			t.Errorf("Refuse(%+v) = %q, want %q", tt.is, got, tt.want)
		}
	}
}
