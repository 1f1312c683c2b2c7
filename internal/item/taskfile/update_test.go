package taskfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTask writes data to a task file in a fresh directory and returns its path.
func writeTask(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "task.md")
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readTask(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestUpdate(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		set      []Field
		want     string
		fixTypes bool
	}{{
		name: "replace in place keeps unknown keys, comments and body",
		in: "---\n# board state\nstage: code            # backlog | plan | code\nowner: \"ana\"  # who\n" +
			"attempts: 0\n---\n# Title\n\n## Goal\n  odd  spacing\t\n",
		set: []Field{{"stage", "audit"}, {"attempts", 1}},
		want: "---\n# board state\nstage: audit           # backlog | plan | code\nowner: \"ana\"  # who\n" +
			"attempts: 1\n---\n# Title\n\n## Goal\n  odd  spacing\t\n",
	}, {
		name: "a longer value pushes the comment out by one space",
		in:   "---\nstage: plan # note\n---\n",
		set:  []Field{{"stage", "completed"}},
		want: "---\nstage: completed # note\n---\n",
	}, {
		name: "missing keys are appended in order",
		in:   "---\nstage: code\nextra: [1, 2]\n# trailing comment\n---\nbody\n",
		set:  []Field{{"agent", "coder"}, {"stage", "audit"}, {"mode", "code"}},
		want: "---\nstage: audit\nextra: [1, 2]\n# trailing comment\nagent: coder\nmode: code\n---\nbody\n",
	}, {
		name: "CRLF kept on replaced and appended lines",
		in:   "---\r\nstage: plan\r\nx: 1\r\n---\r\n# T\r\nbody\r\n",
		set:  []Field{{"stage", "code"}, {"agent", "planner"}},
		want: "---\r\nstage: code\r\nx: 1\r\nagent: planner\r\n---\r\n# T\r\nbody\r\n",
	}, {
		name: "no trailing newline stays none",
		in:   "---\nstage: plan\n---\n# T",
		set:  []Field{{"attempts", 2}},
		want: "---\nstage: plan\nattempts: 2\n---\n# T",
	}, {
		name: "closing line without newline",
		in:   "---\nstage: plan\n---",
		set:  []Field{{"stage", "code"}},
		want: "---\nstage: code\n---",
	}, {
		name: "empty frontmatter",
		in:   "---\n---\n",
		set:  []Field{{"stage", "backlog"}},
		want: "---\nstage: backlog\n---\n",
	}, {
		name: "block values are replaced whole, comments at key level after them kept",
		in: "---\nagent:\n  - a\n  - b\n\n# about mode\nmode: |\n  long\n\n  text\nstage: code\n" +
			"workflow: [x,\n  y]\n---\n",
		set:  []Field{{"agent", "coder"}, {"mode", "code"}, {"workflow", "runner"}},
		want: "---\nagent: coder\n\n# about mode\nmode: code\nstage: code\nworkflow: runner\n---\n",
	}, {
		name: "indentless sequence value",
		in:   "---\nagent:\n- a\n- b\nstage: code\n---\n",
		set:  []Field{{"agent", "x"}},
		want: "---\nagent: x\nstage: code\n---\n",
	}, {
		name: "quoted key",
		in:   "---\n\"stage\": 'plan'\n---\n",
		set:  []Field{{"stage", "code"}},
		want: "---\nstage: code\n---\n",
	}, {
		name: "indented root keeps its indentation",
		in:   "---\n  stage: plan\n  mode: x\n---\n",
		set:  []Field{{"stage", "code"}, {"agent", "coder"}},
		want: "---\n  stage: code\n  mode: x\n  agent: coder\n---\n",
	}, {
		name: "BOM kept",
		in:   "\ufeff---\nstage: plan\n---\n",
		set:  []Field{{"stage", "code"}},
		want: "\ufeff---\nstage: code\n---\n",
	}, {
		name: "strings quoted only when needed",
		in:   "---\nstage: plan\n---\n",
		set: []Field{{"a", "code-writer"}, {"b", "a: b"}, {"c", "yes"}, {"d", ""}, {"e", "12"},
			{"f", "#x"}, {"g", "two\nlines"}, {"h", "x #y"}, {"i", "null"}, {"j", " pad"}, {"k", "naïve"},
			{"l", "tab\there"}, {"m", `say "hi"`}},
		want: "---\nstage: plan\na: code-writer\nb: \"a: b\"\nc: \"yes\"\nd: \"\"\ne: \"12\"\nf: \"#x\"\n" +
			"g: \"two\\nlines\"\nh: \"x #y\"\ni: \"null\"\nj: \" pad\"\nk: naïve\nl: \"tab\\there\"\nm: say \"hi\"\n---\n",
	}, {
		name: "comment after a tab",
		in:   "---\nstage: plan\t# c\n---\n",
		set:  []Field{{"stage", "audit"}},
		want: "---\nstage: audit # c\n---\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTask(t, tt.in)
			if err := Update(path, tt.set); err != nil {
				t.Fatalf("Update: %v", err)
			}
			if got := readTask(t, path); got != tt.want {
				t.Errorf("file:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestUpdateExampleKeepsBody(t *testing.T) {
	orig, err := os.ReadFile("testdata/runner-engine.md")
	if err != nil {
		t.Fatal(err)
	}
	path := writeTask(t, string(orig))
	if err := Update(path, []Field{{"stage", "audit"}, {"attempts", 1}, {"mode", "auditor"}}); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(orig), "stage: completed\n", "stage: audit\n", 1)
	want = strings.Replace(want, "contexts: []\n", "contexts: []\nattempts: 1\nmode: auditor\n", 1)
	if got := readTask(t, path); got != want {
		t.Errorf("file:\n got %q\nwant %q", got, want)
	}
}

func TestUpdateErrors(t *testing.T) {
	tests := []struct {
		name, in string
		set      []Field
		want     string
	}{
		{"unknown stage", "---\nstage: plan\n---\n", []Field{{"stage", "done"}}, `unknown stage "done"`},
		{"negative attempts", "---\nstage: plan\n---\n", []Field{{"attempts", -1}}, `attempts "-1": want a whole number`},
		{"attempts as text", "---\nstage: plan\n---\n", []Field{{"attempts", "1"}}, `attempts "1": want a whole number`},
		{"odd key", "---\nstage: plan\n---\n", []Field{{"a b", "x"}}, `key "a b" is not a simple name`},
		{"key twice", "---\nstage: plan\n---\n", []Field{{"mode", "x"}, {"mode", "y"}}, `key "mode" is set twice`},
		{"list key", "---\nstage: plan\n---\n", []Field{{"tags", "x"}}, `tags is a list`},
		{"odd value", "---\nstage: plan\n---\n", []Field{{"x", 1.5}}, `want a string or an integer`},
		{"bad UTF-8", "---\nstage: plan\n---\n", []Field{{"x", "\xff"}}, `not valid UTF-8`},
		{"flow root", "---\n{stage: plan}\n---\n", []Field{{"stage", "code"}}, `task.md:2: cannot update a frontmatter written as one {...} mapping`},
		{"malformed", "---\nstage: [\n---\n", []Field{{"stage", "code"}}, `task.md:2: malformed frontmatter`},
		{"no frontmatter", "# T\n", []Field{{"stage", "code"}}, `task.md:1: no frontmatter`},
		{"alias to a replaced value", "---\nmode: &m code\nagent: *m\nstage: plan\n---\n", []Field{{"mode", "x"}},
			`the file is left unchanged`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTask(t, tt.in)
			err := Update(path, tt.set)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Update error = %v, want it to contain %q", err, tt.want)
			}
			if got := readTask(t, path); got != tt.in {
				t.Errorf("file changed on error: %q", got)
			}
		})
	}
}

func TestUpdateKeepsModeAndLink(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.md")
	if err := os.WriteFile(real, []byte("---\nstage: plan\n---\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.md")
	if err := os.Symlink("real.md", link); err != nil {
		t.Fatal(err)
	}
	if err := Update(link, []Field{{"stage", "code"}}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.md is no longer a symlink (%v)", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", fi.Mode().Perm())
	}
	if got := readTask(t, real); got != "---\nstage: code\n---\n" {
		t.Errorf("file = %q", got)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries, want 2 (a temp file left behind?)", len(entries))
	}
}

func TestUpdateUnchangedDoesNotRewrite(t *testing.T) {
	path := writeTask(t, "---\nstage: code\n---\n")
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Update(path, []Field{{"stage", "code"}}); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("file was replaced though nothing changed")
	}
}

// TestUpdateNoSyncReplacesAtomically: the unsynced variant makes the same
// change, keeps the mode, replaces the file by rename (a reader holding
// the old file keeps the old content) and leaves no temp file.
func TestUpdateNoSyncReplacesAtomically(t *testing.T) {
	path := writeTask(t, "---\nstage: plan # now\ntitle: T\n---\nbody\n")
	os.Chmod(path, 0o600)
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := UpdateNoSync(path, []Field{{"stage", "code"}, {"attempts", 2}}); err != nil {
		t.Fatal(err)
	}
	if got, want := readTask(t, path), "---\nstage: code # now\ntitle: T\nattempts: 2\n---\nbody\n"; got != want {
		t.Errorf("content:\n%s\nwant:\n%s", got, want)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Error("the file was rewritten in place, not replaced by a rename")
	}
	if after.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", after.Mode().Perm())
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want 1 (a temp file left behind?)", len(entries))
	}
}

func TestUpdateMissingFile(t *testing.T) {
	err := Update(filepath.Join(t.TempDir(), "none.md"), []Field{{"stage", "code"}})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Update of a missing file: %v, want os.ErrNotExist", err)
	}
}

func TestSetReview(t *testing.T) {
	const review = "## Review\n\n**Rating: 6/10**\n\n**Verdict: REJECTED**\n\nMissing tests.\n"
	tests := []struct {
		name     string
		in       string
		rating   int
		accepted bool
		text     string
		want     string
	}{{
		name: "append after trailing blank lines",
		in:   "---\nstage: audit\n---\n# T\n\nDone.\n\n\n  \n",
		text: "Missing tests.", rating: 6,
		want: "---\nstage: audit\n---\n# T\n\nDone.\n\n" + review,
	}, {
		name: "append without trailing newline",
		in:   "---\nstage: audit\n---\n# T\nDone.",
		text: "Missing tests.\n\n", rating: 6,
		want: "---\nstage: audit\n---\n# T\nDone.\n\n" + review,
	}, {
		name: "append to an empty body",
		in:   "---\nstage: audit\n---",
		text: "Missing tests.", rating: 6,
		want: "---\nstage: audit\n---\n\n" + review,
	}, {
		name: "replace keeps following sections",
		in:   "---\nstage: audit\n---\n# T\n\n## Review\n\nold\n### Detail\nold\n## Notes\nkeep\n",
		text: "Missing tests.", rating: 6,
		want: "---\nstage: audit\n---\n# T\n\n" + review + "\n## Notes\nkeep\n",
	}, {
		name: "replace at the end",
		in:   "---\nstage: audit\n---\n# T\n\n## Review\n\nold\n\n",
		text: "\nAll good.\n", rating: 9, accepted: true,
		want: "---\nstage: audit\n---\n# T\n\n## Review\n\n**Rating: 9/10**\n\n**Verdict: ACCEPTED**\n\nAll good.\n",
	}, {
		name: "CRLF file, text with mixed endings",
		in:   "---\r\nstage: audit\r\n---\r\n# T\r\n",
		text: "one\r\ntwo\nthree", rating: 10, accepted: true,
		want: "---\r\nstage: audit\r\n---\r\n# T\r\n\r\n## Review\r\n\r\n**Rating: 10/10**\r\n\r\n" +
			"**Verdict: ACCEPTED**\r\n\r\none\r\ntwo\r\nthree\r\n",
	}, {
		name: "a Review heading inside a code fence is not the section",
		in:   "---\nstage: audit\n---\n```md\n## Review\n```\n",
		text: "Missing tests.", rating: 6,
		want: "---\nstage: audit\n---\n```md\n## Review\n```\n\n" + review,
	}, {
		name: "review text with its own fenced heading is replaced whole",
		in:   "---\nstage: audit\n---\n## Review\n\n~~~\n## not a section\n~~~\n## Next\n",
		text: "Missing tests.", rating: 6,
		want: "---\nstage: audit\n---\n" + review + "\n## Next\n",
	}, {
		name:   "empty text ends at the verdict",
		in:     "---\nstage: audit\n---\n# T\n",
		rating: 0,
		want:   "---\nstage: audit\n---\n# T\n\n## Review\n\n**Rating: 0/10**\n\n**Verdict: REJECTED**\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTask(t, tt.in)
			if err := SetReview(path, tt.rating, tt.accepted, tt.text); err != nil {
				t.Fatalf("SetReview: %v", err)
			}
			if got := readTask(t, path); got != tt.want {
				t.Errorf("file:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestSetReviewExample(t *testing.T) {
	orig, err := os.ReadFile("testdata/runner-engine.md")
	if err != nil {
		t.Fatal(err)
	}
	path := writeTask(t, string(orig))
	if err := SetReview(path, 7, false, "Tests are thin."); err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(orig), "## Review\n")
	if !ok {
		t.Fatal("example has no review")
	}
	want := head + "## Review\n\n**Rating: 7/10**\n\n**Verdict: REJECTED**\n\nTests are thin.\n"
	if got := readTask(t, path); got != want {
		t.Errorf("file:\n got %q\nwant %q", got, want)
	}
}

func TestSetReviewErrors(t *testing.T) {
	for _, rating := range []int{-1, 11} {
		path := writeTask(t, "---\nstage: audit\n---\n")
		if err := SetReview(path, rating, true, "x"); err == nil || !strings.Contains(err.Error(), "not between 0 and 10") {
			t.Errorf("SetReview(rating %d) error = %v", rating, err)
		}
	}
	path := writeTask(t, "# no frontmatter\n")
	if err := SetReview(path, 5, true, "x"); err == nil || !strings.Contains(err.Error(), "task.md:1: no frontmatter") {
		t.Errorf("SetReview without frontmatter: %v", err)
	}
}

func FuzzUpdate(f *testing.F) {
	for _, s := range []string{
		"---\nstage: code # c\nmode: |\n  x\n---\n# T\n",
		"---\r\nstage: plan\r\ntags: [a,\r\n  b]\r\n---\r\nbody",
		"---\n  stage: plan\n  # c\n  agent:\n  - a\n---\n",
	} {
		f.Add([]byte(s), "audit", 2)
	}
	f.Fuzz(func(t *testing.T, data []byte, agent string, attempts int) {
		before, err := Parse("f.md", data)
		if err != nil || attempts < 0 {
			return
		}
		out, err := update("f.md", data, []Field{{"stage", "audit"}, {"agent", agent}, {"attempts", attempts}})
		if err != nil {
			return // refused: the file would have been left as it was
		}
		after, err := Parse("f.md", out)
		if err != nil {
			t.Fatalf("updated file does not parse: %v\n%q", err, out)
		}
		if after.Body != before.Body || after.Stage != "audit" || after.Agent != agent || after.Attempts != attempts {
			t.Fatalf("update of %q gave %q", data, out)
		}
		if _, err := review("f.md", out, 5, true, agent); err != nil {
			t.Fatalf("review: %v", err)
		}
	})
}
