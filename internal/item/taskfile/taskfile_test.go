package taskfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		path string
		data string
		want Task
	}{{
		name: "all fields",
		path: "tasks/add-login.md",
		data: "---\nstage: code            # backlog | plan | code\ntags: [feature, p0]\nagent: coder\nmode: code\n" +
			"attempts: 1\nworkflow: runner\ndepends_on: [setup-db]\ncontexts:\n  - docs/auth.md\n---\n# Add login\n\n## Goal\nLog in.\n",
		want: Task{Path: "tasks/add-login.md", ID: "add-login", Stage: "code", Mode: "code", Agent: "coder",
			Attempts: 1, Workflow: "runner", Tags: []string{"feature", "p0"}, DependsOn: []string{"setup-db"},
			Contexts: []string{"docs/auth.md"}, Title: "Add login", Body: "# Add login\n\n## Goal\nLog in.\n"},
	}, {
		name: "unknown keys and comments are ignored",
		path: "a.md",
		data: "---\n# set by hand\nowner: ana\nstage: plan\nextra: {x: [1, 2]}\n---\nbody\n",
		want: Task{Path: "a.md", ID: "a", Stage: "plan", Title: "a", Body: "body\n"},
	}, {
		name: "CRLF",
		path: "t/b.md",
		data: "---\r\nstage: audit\r\nattempts: 2\r\ntags:\r\n  - x\r\n---\r\n# B task\r\ntext\r\n",
		want: Task{Path: "t/b.md", ID: "b", Stage: "audit", Attempts: 2, Tags: []string{"x"}, Title: "B task",
			Body: "# B task\r\ntext\r\n"},
	}, {
		name: "no trailing newline",
		path: "c.md",
		data: "---\nstage: backlog\n---\n# C",
		want: Task{Path: "c.md", ID: "c", Stage: "backlog", Title: "C", Body: "# C"},
	}, {
		name: "empty body",
		path: "d.md",
		data: "---\nstage: failed\n---\n",
		want: Task{Path: "d.md", ID: "d", Stage: "failed", Title: "d"},
	}, {
		name: "closing line without newline",
		path: "e.md",
		data: "---\nstage: completed\n---",
		want: Task{Path: "e.md", ID: "e", Stage: "completed", Title: "e"},
	}, {
		name: "byte order mark is tolerated",
		path: "f.md",
		data: "\ufeff---\nstage: code\n---\n# F\n",
		want: Task{Path: "f.md", ID: "f", Stage: "code", Title: "F", Body: "# F\n"},
	}, {
		name: "null values are zero",
		path: "g.md",
		data: "---\nstage: code\nmode:\nattempts: ~\ntags:\n---\n",
		want: Task{Path: "g.md", ID: "g", Stage: "code", Title: "g"},
	}, {
		name: "quoted values and blanks after the delimiters",
		path: "h.md",
		data: "--- \nstage: \"plan\"\nagent: 'code-writer'\nattempts: 0\n---\t\n#  Spaced title  \n",
		want: Task{Path: "h.md", ID: "h", Stage: "plan", Agent: "code-writer", Title: "Spaced title",
			Body: "#  Spaced title  \n"},
	}, {
		name: "heading in a code fence is not the title",
		path: "i.md",
		data: "---\nstage: code\n---\n```sh\n# a shell comment\n```\n## Goal\n# Real title\n",
		want: Task{Path: "i.md", ID: "i", Stage: "code", Title: "Real title",
			Body: "```sh\n# a shell comment\n```\n## Goal\n# Real title\n"},
	}, {
		name: "a thematic break in the body is body",
		path: "j.md",
		data: "---\nstage: code\n---\ntext\n---\nmore\n",
		want: Task{Path: "j.md", ID: "j", Stage: "code", Title: "j", Body: "text\n---\nmore\n"},
	}, {
		name: "merge keys",
		path: "k.md",
		data: "---\nbase: &b {stage: plan, agent: planner}\n<<: *b\nagent: coder\n---\n",
		want: Task{Path: "k.md", ID: "k", Stage: "plan", Agent: "coder", Title: "k"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.path, []byte(tt.data))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	stages := "(want one of backlog, plan, code, audit, completed, failed)"
	tests := []struct {
		name, data, want string
	}{
		{"unknown stage", "---\ntags: []\nstage: cod\n---\n", `tasks/a.md:3: unknown stage "cod" ` + stages},
		{"stage not a string", "---\nstage: [code]\n---\n", `tasks/a.md:2: unknown stage "[code]" ` + stages},
		{"empty stage", "---\nstage:\n---\n", `tasks/a.md:2: stage is empty ` + stages},
		{"missing stage", "---\nmode: code\n---\n",
			`tasks/a.md:1: no stage in the frontmatter: add a "stage:" line (one of backlog, plan, code, audit, completed, failed)`},
		{"empty frontmatter", "---\n---\n# T\n",
			`tasks/a.md:1: no stage in the frontmatter: add a "stage:" line (one of backlog, plan, code, audit, completed, failed)`},
		{"no frontmatter", "# Title\n---\nstage: code\n---\n", `tasks/a.md:1: no frontmatter: the file must start with a "---" line`},
		{"empty file", "", `tasks/a.md:1: no frontmatter: the file must start with a "---" line`},
		{"not closed", "---\nstage: code\n# Title\n", `tasks/a.md: frontmatter is not closed by a "---" line`},
		{"unclosed flow list", "---\nstage: code\ntags: [a\nmode: x\n---\n",
			`tasks/a.md:4: malformed frontmatter: ',' or ']' must be specified`},
		{"duplicate key", "---\nstage: code\nmode: a\nstage: plan\n---\n",
			`tasks/a.md:4: malformed frontmatter: mapping key "stage" already defined at line 2`},
		{"tab indent", "---\nstage: code\ntags:\n\t- a\n---\n",
			`tasks/a.md:4: malformed frontmatter: found character '\t' that cannot start any token`},
		{"not a mapping", "---\n- stage\n- code\n---\n",
			`tasks/a.md:2: malformed frontmatter: want "key: value" lines, found a sequence`},
		{"plain text", "---\nstage code\n---\n",
			`tasks/a.md:2: malformed frontmatter: want "key: value" lines, found a string`},
		{"negative attempts", "---\nstage: code\nattempts: -1\n---\n",
			`tasks/a.md:3: attempts is -1: want a whole number 0 or more`},
		{"quoted attempts", "---\nstage: code\n\nattempts: \"2\"\n---\n",
			`tasks/a.md:4: attempts is "2": want a whole number 0 or more`},
		{"fractional attempts", "---\nstage: code\nattempts: 1.5\n---\n",
			`tasks/a.md:3: attempts is "1.5": want a whole number 0 or more`},
		{"word attempts", "---\nstage: code\nattempts: two\n---\n",
			`tasks/a.md:3: attempts is "two": want a whole number 0 or more`},
		{"mode is a list", "---\nstage: code\nmode: [a]\n---\n",
			`tasks/a.md:3: mode must be a single word or text, e.g. mode: code`},
		{"tags not a list", "---\nstage: code\ntags: feature\n---\n",
			`tasks/a.md:3: tags must be a list, e.g. tags: [a, b]`},
		{"dependency not text", "---\nstage: code\ndepends_on: [a, 12]\n---\n",
			`tasks/a.md:3: depends_on: item 2 must be text (quote it: "12")`},
		{"missing alias", "---\nstage: *s\n---\n", `tasks/a.md:2: malformed frontmatter: could not find alias "s"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("tasks/a.md", []byte(tt.data))
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n got %s\nwant %s", err, tt.want)
			}
			var te *Error
			if !errors.As(err, &te) || te.Path != "tasks/a.md" {
				t.Errorf("error %#v is not an *Error naming the file", err)
			}
		})
	}
}

func TestParseExampleTask(t *testing.T) {
	task, err := Load("testdata/runner-engine.md")
	if err != nil {
		t.Fatal(err)
	}
	if task.ID != "runner-engine" || task.Stage != "completed" || task.Agent != "auditor" ||
		task.Title != "Runner execution engine" || !cmp.Equal(task.Tags, []string{"feature", "p0"}) {
		t.Errorf("Load = %+v", task)
	}
	data, err := os.ReadFile("testdata/runner-engine.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(data), task.Body) || !strings.HasPrefix(task.Body, "\n# Runner execution engine\n") {
		t.Errorf("Body is not the text after the frontmatter: %.60q", task.Body)
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.md"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load of a missing file: %v, want os.ErrNotExist", err)
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{
		"b.md", "a.md", "README.md", "notes.txt", "sub/readme.md", "sub/c.md", "sub/deeper/a.md",
		".hidden/x.md", "sub/.git/y.md", ".draft.md", "zz.MD",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("---\nstage: code\n---\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "dir.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.md", filepath.Join(dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("missing.md", filepath.Join(dir, "dangling.md")); err != nil {
		t.Fatal(err)
	}
	got, err := Find(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range []string{"a.md", "b.md", "link.md", "sub/c.md", "sub/deeper/a.md"} {
		want = append(want, filepath.Join(dir, name))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Find (-want +got):\n%s", diff)
	}

	t.Chdir(dir)
	for _, tt := range []struct {
		dir  string
		want []string
	}{
		{".", []string{"a.md", "b.md", "link.md", "sub/c.md", "sub/deeper/a.md"}},
		{"sub", []string{"sub/c.md", "sub/deeper/a.md"}},
		{"sub/", []string{"sub/c.md", "sub/deeper/a.md"}},
	} {
		got, err := Find(tt.dir)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Find(%q) (-want +got):\n%s", tt.dir, diff)
		}
	}

	link := filepath.Join(t.TempDir(), "tasks")
	if err := os.Symlink(filepath.Join(dir, "sub"), link); err != nil {
		t.Fatal(err)
	}
	got, err = Find(link)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{filepath.Join(link, "c.md"), filepath.Join(link, "deeper/a.md")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Find through a linked dir (-want +got):\n%s", diff)
	}

	if _, err := Find(filepath.Join(dir, "a.md")); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("Find of a file: %v", err)
	}
	if _, err := Find(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Find of a missing dir: %v, want os.ErrNotExist", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"---\nstage: code\n---\n# T\n",
		"---\r\nstage: plan\r\ntags: [a, b]\r\nattempts: 3\r\n---\r\nbody",
		"---\nstage: *a\n<<: {x: 1}\n---\n",
		"---\n? [a]\n: b\n---\n",
		"\ufeff---\n---\n",
		"---\nstage: |\n  code\n---\n```\n# x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		task, err := Parse("f.md", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error has more than one line: %q", err)
			}
			return
		}
		if !strings.HasSuffix(string(data), task.Body) || task.Title == "" || task.Stage == "" {
			t.Errorf("Parse(%q) = %+v", data, task)
		}
	})
}

// Abs resolves the links among a task file's directories, as git resolves
// a repository's root, and leaves a task file that is a link as it is.
func TestAbsResolvesDirectoriesNotTheFile(t *testing.T) {
	real, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(real, "repo", "tasks"), 0o755)
	os.WriteFile(filepath.Join(real, "repo", "tasks", "t.md"), []byte("# T\n"), 0o644)
	if err := os.Symlink(filepath.Join(real, "repo"), filepath.Join(real, "link")); err != nil {
		t.Skip("no symbolic links here: ", err)
	}
	os.Symlink(filepath.Join(real, "repo", "tasks", "t.md"), filepath.Join(real, "repo", "tasks", "l.md"))
	for p, want := range map[string]string{
		filepath.Join(real, "link", "tasks", "t.md"): filepath.Join(real, "repo", "tasks", "t.md"),
		filepath.Join(real, "link", "tasks", "l.md"): filepath.Join(real, "repo", "tasks", "l.md"),
		filepath.Join(real, "gone", "t.md"):          filepath.Join(real, "gone", "t.md"),
	} {
		if got, err := Abs(p); err != nil || got != want {
			t.Errorf("Abs(%s) = %s, %v; want %s", p, got, err, want)
		}
	}
}
