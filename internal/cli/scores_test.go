package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/cli"
	"github.com/cadre-dev/cadre/internal/store"
)

// seedEvals records evs in dir's journal, as runs and cadre bench will.
func seedEvals(t *testing.T, dir string, evs ...store.Evaluation) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.RecordEvaluations(ctx, evs...); err != nil {
		t.Fatal(err)
	}
}

// scored is an evaluation of step in run r1 with a score and, when ok is
// not nil, a verdict.
func scored(source, step, role, runner, model string, score float64, ok *bool, usd float64) store.Evaluation {
	e := store.Evaluation{Source: source, RunID: "r1", StepID: step, Role: role, Runner: runner, Model: model,
		Kind: store.KindJudge, Score: &score, Passed: ok}
	if usd > 0 {
		e.Usage = &store.EvalUsage{CostUSD: usd, LatencyMS: 2500, InputTokens: 100, OutputTokens: 10}
	}
	return e
}

func TestNewCmdScoresOptions(t *testing.T) {
	tests := []struct {
		args    string
		want    cli.ScoresOptions
		wantErr string
	}{
		{"", cli.ScoresOptions{}, ""},
		{"code-writer --json", cli.ScoresOptions{Role: "code-writer", JSON: true}, ""},
		{"--source bench", cli.ScoresOptions{Source: "bench"}, ""},
		{"--source prod", cli.ScoresOptions{}, `--source "prod": want run or bench`},
		{"a b", cli.ScoresOptions{}, "accepts at most 1 arg"},
	}
	for _, tt := range tests {
		got := parsedOptions(t, cli.NewCmdScores, tt.args, tt.wantErr)
		if got != nil && *got != tt.want {
			t.Errorf("%q: opts = %+v; want %+v", tt.args, *got, tt.want)
		}
	}
}

// parsedOptions runs the command newCmd builds on args with a run function
// that only keeps its options, and returns them. With wantErr set it
// checks the command fails with an error containing wantErr, without
// running, and returns nil; it returns nil too when the command failed.
func parsedOptions[T any](t *testing.T, newCmd func(*cli.Factory, func(context.Context, *cli.Factory, *T) error) *cobra.Command, args, wantErr string) *T {
	t.Helper()
	var got *T
	f := &cli.Factory{IO: cli.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
	cmd := newCmd(f, func(_ context.Context, _ *cli.Factory, o *T) error {
		got = o
		return nil
	})
	cmd.SetArgs(strings.Fields(args))
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.Execute()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: err = %v, want containing %q", args, err, wantErr)
		}
		if got != nil {
			t.Errorf("%q: command ran despite the error", args)
		}
		return nil
	}
	if err != nil || got == nil {
		t.Errorf("%q: opts %+v, err %v", args, got, err)
		return nil
	}
	return got
}

func TestScoresTableBestFirst(t *testing.T) {
	dir := gitRepo(t, nil)
	yes, no := true, false
	seedEvals(t, dir,
		scored(store.SourceRun, "s1", "coder", "codex", "", 0.6, &yes, 0.05),
		scored(store.SourceRun, "s2", "coder", "claude", "sonnet", 0.9, &yes, 0.20),
		scored(store.SourceRun, "s3", "coder", "claude", "sonnet", 0.7, &no, 0),
		scored(store.SourceBench, "s4", "coder", "ollama", "qwen3", 0.95, nil, 0),
		scored(store.SourceRun, "s5", "planner", "claude", "opus", 0.5, nil, 0),
		// An outcome alone: no score, so it ranks last in its role.
		store.Evaluation{Source: store.SourceRun, RunID: "r1", ItemID: "a", Role: "coder", Runner: "aider", Kind: store.KindOutcome, Passed: &yes},
	)

	code, out, errOut := runCadre(t, dir, nil, "scores")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	want := []string{
		`^role coder$`,
		`^RUNNER/MODEL +SAMPLES +PASS +SCORE +COST +LATENCY$`,
		`^ollama/qwen3 +1 +- +9\.5 +- +-$`,
		`^claude/sonnet +2 +50% +8\.0 +\$0\.2000 +2\.5s$`,
		`^codex +1 +100% +6\.0 +\$0\.0500 +2\.5s$`,
		`^aider +1 +100% +- +- +-$`,
		`^$`,
		`^role planner$`,
		`^RUNNER/MODEL`,
		`^claude/opus +1 +- +5\.0 +- +-$`,
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, re := range want {
		if !regexp.MustCompile(re).MatchString(lines[i]) {
			t.Errorf("line %d = %q, want matching %s", i+1, lines[i], re)
		}
	}

	code, out, _ = runCadre(t, dir, nil, "scores", "coder", "--source", "run", "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d", code)
	}
	var got struct {
		Role, Source string
		Rows         []map[string]any
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	var cands []string
	for _, r := range got.Rows {
		cands = append(cands, r["candidate"].(string))
	}
	// Only coder, only runs: ollama's bench record and the planner are out.
	if diff := cmp.Diff([]string{"claude/sonnet", "codex", "aider"}, cands); diff != "" {
		t.Errorf("--json candidates (-want +got):\n%s", diff)
	}
	if r := got.Rows[0]; r["mean_score"] != 0.8 || r["pass_rate"] != 0.5 || r["samples"] != 2.0 {
		t.Errorf("claude/sonnet row = %v, want mean_score 0.8, pass_rate 0.5, samples 2", r)
	}
	if r := got.Rows[2]; r["mean_score"] != nil || r["mean_cost_usd"] != nil {
		t.Errorf("aider row = %v, want null mean_score and mean_cost_usd (nothing recorded)", r)
	}
}

func TestScoresWithoutEvaluations(t *testing.T) {
	dir := gitRepo(t, nil)
	code, out, errOut := runCadre(t, dir, nil, "scores")
	if code != 0 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "no evaluations recorded yet") {
		t.Errorf("no journal: exit %d, stdout %q, stderr %q; want exit 0, one line on stderr", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, ".cadre")); !os.IsNotExist(err) {
		t.Errorf("cadre scores created .cadre in a repository without runs (stat err %v)", err)
	}

	seedEvals(t, dir, scored(store.SourceRun, "s1", "coder", "claude", "", 0.5, nil, 0))
	code, _, errOut = runCadre(t, dir, nil, "scores", "planner")
	if code != 0 || !strings.Contains(errOut, "no evaluations recorded for role planner yet") {
		t.Errorf("other role: exit %d, stderr %q", code, errOut)
	}
	code, out, _ = runCadre(t, dir, nil, "scores", "--source", "bench", "--json")
	if code != 0 || !strings.Contains(out, `"rows": []`) {
		t.Errorf("--json with nothing recorded: exit %d, stdout %q; want an empty rows list", code, out)
	}
}

// TestReportByModelShowsScores: cadre report --by model adds SCORE and
// EVALS columns once the run's steps were evaluated, and not before.
func TestReportByModelShowsScores(t *testing.T) {
	dir := gitRepo(t, nil)
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	step := store.Step{RunID: "r1", ID: "a/code", Role: "coder", Runner: "claude", Model: "sonnet", Kind: "agent", Status: store.StepCompleted}
	for _, err := range []error{st.CreateRun(ctx, store.Run{ID: "r1"}), st.StartStep(ctx, step), st.FinishStep(ctx, step)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	code, out, errOut := runCadre(t, dir, nil, "report", "--by", "model")
	if code != 0 || strings.Contains(out, "SCORE") {
		t.Fatalf("before evaluation: exit %d, stderr %q, stdout:\n%s\nwant no SCORE column", code, errOut, out)
	}
	seedEvals(t, dir, scored(store.SourceRun, "a/code", "coder", "claude", "sonnet", 0.85, nil, 0))
	_, out, _ = runCadre(t, dir, nil, "report", "--by", "model")
	for _, re := range []string{`(?m)^KEY .* SCORE +EVALS$`, `(?m)^sonnet +1 .* 8\.5 +1$`, `(?m)^total +1 .* 8\.5 +1$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("report --by model: no line matching %s in:\n%s", re, out)
		}
	}
	_, out, _ = runCadre(t, dir, nil, "report", "--by", "model", "--json")
	if !strings.Contains(out, `"eval_mean_score": 0.85`) || !strings.Contains(out, `"eval_samples": 1`) {
		t.Errorf("report --by model --json lacks the evaluation fields:\n%s", out)
	}
}
