package script_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
	"github.com/cadre-dev/cadre/internal/runner/script"
	"github.com/cadre-dev/cadre/internal/signal"
)

// load writes a scenario file and builds a runner from it.
func load(t *testing.T, scenario string) runner.Runner {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := script.New(runner.Settings{Name: "scripted", Scenario: "scenario.yaml", BaseDir: dir})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// scenarios plays each behaviour of the conformance suite that an in-process
// runner can: it reads no context file and has no environment of its own.
var scenarios = map[runnertest.Behavior]string{
	runnertest.OK: fmt.Sprintf(`rules:
  - role: "*"
    actions:
      - write: {path: %s, content: "done\n"}
    say: Wrote the work file.
    signal: {result: SUCCESS, summary: wrote it, confidence: 9, next: auditor}
    usage: {input_tokens: %d, output_tokens: %d, cost_usd: %v}
`, runnertest.WorkFile, runnertest.OKUsage.InputTokens, runnertest.OKUsage.OutputTokens, runnertest.OKUsage.CostUSD),
	runnertest.Crash: fmt.Sprintf("rules:\n  - {role: \"*\", exit: %d, stderr: %s}\n", runnertest.CrashExit, runnertest.CrashStderr),
	runnertest.Hang:  "rules:\n  - role: \"*\"\n    actions: [{sleep: 1h}]\n",
	// The reply is the scenario's own text; what can flood is a command run
	// by a step, whose output goes to the log.
	runnertest.Flood: fmt.Sprintf("rules:\n  - role: \"*\"\n    actions: [{run: [sh, -c, \"yes 0123456789abcdef | head -c %d\"]}]\n", runnertest.FloodSize),
}

// unplayable says why the other behaviours have no scenario.
var unplayable = map[runnertest.Behavior]string{
	runnertest.WriteOutput: "its reply is returned, never written to the output file",
	runnertest.Context:     "it does not read the context file",
	runnertest.Env:         "it runs in-process, with no environment of its own (TestRunActionEnvIsMinimal covers its commands)",
}

func TestConformance(t *testing.T) {
	runnertest.Run(t, runnertest.Harness{
		New: func(t *testing.T, b runnertest.Behavior) runner.Runner {
			sc, ok := scenarios[b]
			if !ok {
				t.Skipf("the script runner cannot behave as %q: %s", b, unplayable[b])
			}
			return load(t, sc)
		},
		Usage:     true,
		InProcess: true,
	})
}

// inv is an invocation in a fresh working tree.
func inv(t *testing.T, role, item string, attempt int, reask bool) runner.Invocation {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "worktree")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return runner.Invocation{Role: role, Item: item, Attempt: attempt, Reask: reask, Dir: dir,
		Step:    fmt.Sprintf("%s/code/%s#%d", item, role, attempt),
		LogPath: filepath.Join(root, "logs", "step.log")}
}

// ask is a step asking a scenario: by role, for task, on its attempt,
// maybe a re-ask; want is the reply it gets, "" when no rule matches.
type ask struct {
	name    string
	role    string
	task    string
	attempt int
	reask   bool
	want    string
}

// play asks the scenario each ask and checks its reply. An ask no rule
// matches is an agent crash naming the ask, not an error.
func play(t *testing.T, scenario string, asks ...ask) {
	r := load(t, scenario)
	for _, tt := range asks {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.Run(t.Context(), inv(t, tt.role, tt.task, tt.attempt, tt.reask))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if tt.want != "" {
				if res.ExitCode != 0 || res.Output != tt.want {
					t.Errorf("exit %d, output %q; want exit 0, %q", res.ExitCode, res.Output, tt.want)
				}
				return
			}
			if res.ExitCode != 1 {
				t.Errorf("exit %d, want 1", res.ExitCode)
			}
			for _, want := range []string{tt.role, tt.task, "attempt " + strconv.Itoa(tt.attempt)} {
				if !strings.Contains(res.StderrTail, want) {
					t.Errorf("message %q does not name %q", res.StderrTail, want)
				}
			}
		})
	}
}

func TestMatching(t *testing.T) {
	play(t, `rules:
  - {role: coder, task: t1, attempt: 1, reask: true, say: coder-t1-1-reask}
  - {role: coder, task: t1, attempt: 1, say: coder-t1-1}
  - {role: coder, task: t1, attempt: 2, say: coder-t1-2}
  - {role: coder, task: t1, say: coder-t1-any}
  - {role: coder, reask: false, say: coder-first-ask}
  - {role: auditor, say: auditor-any}
  - {role: auditor, say: auditor-shadowed}
  - {role: "*", task: t9, say: star-t9}
`,
		ask{"role task attempt", "coder", "t1", 1, false, "coder-t1-1"},
		ask{"reask rule only on reask", "coder", "t1", 1, true, "coder-t1-1-reask"},
		ask{"second attempt", "coder", "t1", 2, false, "coder-t1-2"},
		ask{"attempt 0 matches any", "coder", "t1", 5, false, "coder-t1-any"},
		ask{"reask false matches first asks", "coder", "t2", 1, false, "coder-first-ask"},
		ask{"first match wins", "auditor", "t1", 1, false, "auditor-any"},
		ask{"star matches any role", "planner", "t9", 3, false, "star-t9"},
	)
}

func TestNoMatch(t *testing.T) {
	play(t, "rules:\n  - {role: coder, task: t1, reask: false, say: x}\n",
		ask{"other role", "auditor", "t1", 1, false, ""},
		ask{"other task", "coder", "t2", 1, false, ""},
		ask{"reask excluded", "coder", "t1", 4, true, ""},
	)
}

// runIn plays a one-rule scenario of actions in a working tree prepared with
// files, returning the result and the tree.
func runIn(t *testing.T, files map[string]string, actions ...string) (runner.Result, string) {
	t.Helper()
	rule := "rules:\n  - role: coder\n    actions:\n"
	for _, a := range actions {
		rule += "      - " + a + "\n"
	}
	r := load(t, rule+"    say: finished\n")
	in := inv(t, "coder", "t1", 1, false)
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(in.Dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := r.Run(t.Context(), in)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res, in.Dir
}

func TestActions(t *testing.T) {
	type tree = map[string]string
	tests := []struct {
		name    string
		actions []string
		files   tree // before
		want    tree // after; "" means absent
		exit    int
		stderr  string
	}{
		{"write creates directories", []string{`write: {path: a/b/c.txt, content: "hi\n"}`}, nil, tree{"a/b/c.txt": "hi\n"}, 0, ""},
		{"write replaces content", []string{"write: {path: f.txt, content: new}"}, tree{"f.txt": "old old old"}, tree{"f.txt": "new"}, 0, ""},
		{"append adds to the end", []string{`append: {path: f.txt, content: "two\n"}`}, tree{"f.txt": "one\n"}, tree{"f.txt": "one\ntwo\n"}, 0, ""},
		{"append creates", []string{"append: {path: g.txt, content: x}"}, nil, tree{"g.txt": "x"}, 0, ""},
		{"replace patches the first occurrence", []string{"replace: {path: f.txt, old: Bye, new: Goodbye}"},
			tree{"f.txt": "Bye. Bye."}, tree{"f.txt": "Goodbye. Bye."}, 0, ""},
		{"replace of missing text fails the step", []string{"replace: {path: f.txt, old: Hello, new: Hi}", "write: {path: after.txt, content: x}"},
			tree{"f.txt": "Bye"}, tree{"f.txt": "Bye", "after.txt": ""}, 1, `"Hello" not found in f.txt`},
		{"replace of a missing file fails the step", []string{"replace: {path: nofile.txt, old: a, new: b}"}, nil, nil, 1, "nofile.txt"},
		{"run argv in the working tree", []string{`run: [sh, -c, "echo $0 > argv.txt", "two words"]`}, nil, tree{"argv.txt": "two words\n"}, 0, ""},
		{"run failure fails the step", []string{`run: [sh, -c, "echo broken >&2; exit 4"]`}, nil, nil, 1, "exit 4"},
		{"actions run in order", []string{"write: {path: f.txt, content: a}", "append: {path: f.txt, content: b}", "replace: {path: f.txt, old: ab, new: c}"},
			nil, tree{"f.txt": "c"}, 0, ""},
		{"short sleep then write", []string{"sleep: 1ms", "write: {path: f.txt, content: slept}"}, nil, tree{"f.txt": "slept"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, dir := runIn(t, tt.files, tt.actions...)
			if res.ExitCode != tt.exit {
				t.Errorf("exit %d, want %d (stderr %q)", res.ExitCode, tt.exit, res.StderrTail)
			}
			if tt.stderr != "" && !strings.Contains(res.StderrTail, tt.stderr) {
				t.Errorf("stderr %q lacks %q", res.StderrTail, tt.stderr)
			}
			if tt.exit == 0 && res.Output != "finished" {
				t.Errorf("output %q, want the rule's reply", res.Output)
			}
			for name, want := range tt.want {
				data, err := os.ReadFile(filepath.Join(dir, name))
				switch {
				case want == "" && err == nil:
					t.Errorf("%s exists, want it absent", name)
				case want != "" && err != nil:
					t.Errorf("%s: %v", name, err)
				case want != "" && string(data) != want:
					t.Errorf("%s = %q, want %q", name, data, want)
				}
			}
		})
	}
}

func TestRunActionEnvIsMinimal(t *testing.T) {
	secret := "leaked-" + strconv.Itoa(os.Getpid())
	t.Setenv(runnertest.SecretEnv, secret)
	_, dir := runIn(t, nil, `run: [sh, -c, "env > env.txt"]`)
	data, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), secret) {
		t.Errorf("the secret reached the command:\n%s", data)
	}
	if !regexp.MustCompile(`(?m)^PATH=`).Match(data) {
		t.Errorf("PATH missing:\n%s", data)
	}
}

func TestSleepHonoursContext(t *testing.T) {
	r := load(t, "rules:\n  - role: coder\n    actions: [{sleep: 1h}, {write: {path: after.txt, content: x}}]\n")
	tests := []struct {
		name    string
		timeout time.Duration
		cancel  bool
		want    error
	}{
		{"canceled", 0, true, context.Canceled},
		{"timeout", time.Millisecond, false, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			in := inv(t, "coder", "t1", 1, false)
			in.Timeout = tt.timeout
			_, err := r.Run(ctx, in)
			if !errors.Is(err, tt.want) {
				t.Errorf("Run error %v, want one wrapping %v", err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(in.Dir, "after.txt")); err == nil {
				t.Error("the action after the interrupted sleep ran")
			}
		})
	}
}

// TestRunActionKilledOnCancel shows a command run by a step goes down with
// its whole process group when the step is canceled.
func TestRunActionKilledOnCancel(t *testing.T) {
	r := load(t, "rules:\n  - role: coder\n    actions: [{run: [sh, -c, \"sleep 1000 & echo $! > pid.tmp && mv pid.tmp child.pid; wait\"]}]\n")
	in := inv(t, "coder", "t1", 1, false)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stop := runnertest.CancelOnFile(cancel, filepath.Join(in.Dir, runnertest.ChildPIDFile))
	_, err := r.Run(ctx, in)
	stop()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error %v, want one wrapping context.Canceled", err)
	}
	runnertest.ChildGone(t, in.Dir)
}

func TestPathConfinement(t *testing.T) {
	tests := []struct {
		name   string
		path   string                                  // "{outside}" stands for the directory beside the tree
		setup  func(t *testing.T, dir, outside string) // makes links in dir
		escape string                                  // file in outside that must keep its content
	}{
		{name: "parent", path: "../x.txt", escape: "x.txt"},
		{name: "nested parent", path: "a/../../x.txt", escape: "x.txt"},
		{name: "absolute", path: "{outside}/x.txt", escape: "x.txt"},
		{name: "absolute system path", path: "/etc/cadre-script-test.txt"},
		{
			name: "symlinked directory", path: "link/x.txt", escape: "x.txt",
			setup: func(t *testing.T, dir, outside string) { symlink(t, outside, filepath.Join(dir, "link")) },
		},
		{
			name: "new directory under a symlinked directory", path: "link/new/x.txt", escape: "new/x.txt",
			setup: func(t *testing.T, dir, outside string) { symlink(t, outside, filepath.Join(dir, "link")) },
		},
		{
			name: "symlinked file", path: "x.txt", escape: "target.txt",
			setup: func(t *testing.T, dir, outside string) {
				symlink(t, filepath.Join(outside, "target.txt"), filepath.Join(dir, "x.txt"))
			},
		},
	}
	actions := map[string]string{
		"write":   "write: {path: %q, content: evil}",
		"append":  "append: {path: %q, content: evil}",
		"replace": "replace: {path: %q, old: safe, new: evil}",
	}
	for _, action := range []string{"write", "append", "replace"} {
		for _, tt := range tests {
			t.Run(action+"/"+tt.name, func(t *testing.T) {
				in := inv(t, "coder", "t1", 1, false)
				// outside sits beside the working tree, so ../x.txt lands in it.
				outside := filepath.Dir(in.Dir)
				for _, name := range []string{"x.txt", "target.txt"} {
					if err := os.WriteFile(filepath.Join(outside, name), []byte("safe"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if tt.setup != nil {
					tt.setup(t, in.Dir, outside)
				}
				path := strings.ReplaceAll(tt.path, "{outside}", outside)
				if filepath.IsAbs(path) {
					t.Cleanup(func() { os.Remove(path) }) // in case it was not refused
				}
				r := load(t, "rules:\n  - role: coder\n    actions:\n      - "+fmt.Sprintf(actions[action], path)+"\n")
				res, err := r.Run(t.Context(), in)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				escaped := false
				if tt.escape != "" {
					data, err := os.ReadFile(filepath.Join(outside, tt.escape))
					escaped = err == nil && string(data) != "safe"
				}
				if res.ExitCode != 1 || escaped || !strings.Contains(res.StderrTail, "working tree") {
					t.Errorf("%s to %q was not refused: exit %d, stderr %q, wrote outside: %v", action, path, res.ExitCode, res.StderrTail, escaped)
				}
			})
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestInsideLinksAllowed(t *testing.T) {
	r := load(t, "rules:\n  - role: coder\n    actions:\n      - write: {path: sub/../in.txt, content: a}\n      - write: {path: alias/f.txt, content: b}\n")
	in := inv(t, "coder", "t1", 1, false)
	if err := os.Mkdir(filepath.Join(in.Dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, "real", filepath.Join(in.Dir, "alias"))
	res, err := r.Run(t.Context(), in)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("paths inside the tree refused: exit %d, %q, %v", res.ExitCode, res.StderrTail, err)
	}
	for name, want := range map[string]string{"in.txt": "a", "real/f.txt": "b"} {
		if data, _ := os.ReadFile(filepath.Join(in.Dir, name)); string(data) != want {
			t.Errorf("%s = %q, want %q", name, data, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // substrings of the one-line error
	}{
		{"unknown key", "rules:\n  - role: coder\n    sya: hi\n", []string{"demo.yaml:3: ", "sya"}},
		{"unknown top-level key", "rule:\n  - role: coder\n", []string{"demo.yaml", "rule"}},
		{"missing role", "rules:\n  - say: hi\n", []string{"demo.yaml", "rules[0]", "role is required"}},
		{"missing role in a later rule", "rules:\n  - role: a\n  - task: t\n", []string{"demo.yaml", "rules[1]", "role"}},
		{"two actions in one entry", "rules:\n  - role: coder\n    actions:\n      - write: {path: a, content: b}\n        sleep: 1s\n", []string{"demo.yaml", "rules[0].actions[0]", "exactly one"}},
		{"empty action", "rules:\n  - role: coder\n    actions: [{}]\n", []string{"demo.yaml", "actions[0]", "exactly one"}},
		{"bad sleep duration", "rules:\n  - role: coder\n    actions: [{write: {path: a}}, {sleep: soon}]\n", []string{"demo.yaml", "actions[1]", "sleep", "soon"}},
		{"not yaml", "rules: [\n", []string{"demo.yaml"}},
		{"wrong type", "rules:\n  - role: coder\n    attempt: first\n", []string{"demo.yaml:3: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := script.Parse("demo.yaml", []byte(tt.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans lines: %q", msg)
			}
			// file:line as cadre.yaml's errors, not the YAML library's [line:column].
			if regexp.MustCompile(`\[\d+:\d+\]`).MatchString(msg) {
				t.Errorf("error %q has the library's position", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("rules:\n  - say: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		scenario string
		want     []string
	}{
		{"empty", "", []string{"runners.demo.scenario", "empty"}},
		{"missing file", "nope.yaml", []string{"runners.demo.scenario", "nope.yaml"}},
		{"bad content", "bad.yaml", []string{"bad.yaml", "role is required"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := script.New(runner.Settings{Name: "demo", Scenario: tt.scenario, BaseDir: dir})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestSignalBlockParses(t *testing.T) {
	tests := []struct {
		name string
		rule string
		say  string
		want signal.Signal
	}{
		{
			name: "every field",
			rule: `signal: {result: PASS, summary: all good, confidence: 8, next: Done, context: see notes, rating: 9, verdict: pass, signature: "1:2:3"}`,
			want: signal.Signal{Agent: "auditor", Result: signal.Pass, LoopSummary: "all good", Confidence: signal.Int(8),
				Next: "Done", Context: "see notes", Rating: signal.Int(9), Verdict: signal.VerdictPass, Signature: "1:2:3"},
		},
		{
			name: "result only",
			rule: `signal: {result: INSUFFICIENT}`,
			want: signal.Signal{Agent: "auditor", Result: signal.Insufficient},
		},
		{
			name: "zero scores",
			rule: `signal: {result: FAIL, confidence: 0, rating: 0, verdict: needs-fixes}`,
			want: signal.Signal{Agent: "auditor", Result: signal.Fail, Confidence: signal.Int(0), Rating: signal.Int(0), Verdict: signal.VerdictNeedsFixes},
		},
		{
			name: "after a reply with no final newline",
			rule: "say: \"Looks fine\"\n    signal: {result: SUCCESS, next: coder}",
			say:  "Looks fine",
			want: signal.Signal{Agent: "auditor", Result: signal.Success, Next: "coder"},
		},
		{
			name: "multi-line context",
			rule: "signal:\n      result: SUCCESS\n      context: |\n        first line\n        second line",
			want: signal.Signal{Agent: "auditor", Result: signal.Success, Context: "first line\nsecond line"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := load(t, "rules:\n  - role: auditor\n    "+tt.rule+"\n")
			res, err := r.Run(t.Context(), inv(t, "auditor", "t1", 1, false))
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("Run: exit %d, %v", res.ExitCode, err)
			}
			if !strings.HasPrefix(res.Output, tt.say) {
				t.Errorf("reply %q does not start with %q", res.Output, tt.say)
			}
			got, err := signal.Parse(res.Output)
			if err != nil {
				t.Fatalf("signal.Parse(%q): %v", res.Output, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("parsed signal (-want +got):\n%s\nreply:\n%s", diff, res.Output)
			}
		})
	}
}

func TestNoSignalWithoutBlock(t *testing.T) {
	r := load(t, "rules:\n  - {role: coder, say: just text}\n")
	res, err := r.Run(t.Context(), inv(t, "coder", "t1", 1, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signal.Parse(res.Output); !errors.Is(err, signal.ErrNoBlock) {
		t.Errorf("a rule without signal printed a block: %q (%v)", res.Output, err)
	}
}

func TestUsageAndLog(t *testing.T) {
	r := load(t, `rules:
  - role: coder
    actions: [{write: {path: f.txt, content: x}}]
    say: reply text
    stderr: a warning
    usage: {input_tokens: 10, output_tokens: 20, cache_read_tokens: 30, cache_write_tokens: 40, cost_usd: 0.5}
`)
	in := inv(t, "coder", "t1", 1, false)
	res, err := r.Run(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := event.Usage{InputTokens: 10, OutputTokens: 20, CacheReadTokens: 30, CacheWriteTokens: 40, CostUSD: 0.5}
	if res.Usage != want {
		t.Errorf("usage %+v, want %+v", res.Usage, want)
	}
	if res.StderrTail != "a warning" {
		t.Errorf("stderr %q", res.StderrTail)
	}
	data, err := os.ReadFile(in.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"f.txt", "reply text", "a warning"} {
		if !strings.Contains(string(data), w) {
			t.Errorf("log lacks %q:\n%s", w, data)
		}
	}
}

// TestDocumentedExamples keeps docs/script-runner.md honest: every YAML
// example in it is a valid scenario.
func TestDocumentedExamples(t *testing.T) {
	path := filepath.Join("..", "..", "..", "docs", "script-runner.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(data), -1)
	if len(blocks) == 0 {
		t.Fatalf("%s has no yaml example", path)
	}
	for i, b := range blocks {
		if _, err := script.Parse(fmt.Sprintf("%s example %d", path, i+1), []byte(b[1])); err != nil {
			t.Error(err)
		}
	}
}

func TestCapabilities(t *testing.T) {
	r := load(t, "rules: []\n")
	if r.Name() != "scripted" {
		t.Errorf("Name = %q", r.Name())
	}
	if c := r.Capabilities(); !c.EditsFiles || !c.ReportsCost {
		t.Errorf("Capabilities = %+v, want files edited and cost reported", c)
	}
}
