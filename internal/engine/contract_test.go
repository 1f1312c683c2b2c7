package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/signal"
)

// TestInvokeTriageWithoutSignalBlock: a triage reply is its JSON decision
// (docs/workflows.md#triage); without a SIGNAL BLOCK it is neither re-asked nor failed, so
// "run: routed" can follow it or fall back to standard. Other roles keep
// the re-ask and the failure.
func TestInvokeTriageWithoutSignalBlock(t *testing.T) {
	tests := []struct {
		name, role, reply string
		exit              int
		wantCalls         int
		wantFailure       string // substring; "" = the step succeeds
		wantResult        signal.Result
		wantSummary       string
	}{
		{name: "bare json", role: "triage", reply: `{"workflow":"DEBUG","roles":["debugger","executor","verifier"],"reasoning":"a crash","answer":null}`,
			wantCalls: 1, wantResult: signal.Success, wantSummary: "chose workflow debug (debugger, executor, verifier)"},
		{name: "fenced json", role: "triage", reply: "Routing:\n```json\n{\"workflow\":\"quick\",\"roles\":[],\"reasoning\":\"math\",\"answer\":\"4\"}\n```\n",
			wantCalls: 1, wantResult: signal.Success, wantSummary: "chose workflow quick"},
		{name: "neither json nor block", role: "triage", reply: "I would look around first.",
			wantCalls: 1, wantSummary: "no usable routing decision"},
		{name: "a usable block wins", role: "triage", reply: "{\"workflow\":\"simple\"}\n\n### SIGNAL BLOCK\n- Result: SUCCESS\n- Loop Summary: picked simple\n- Confidence: 3\n",
			wantCalls: 1, wantResult: signal.Success, wantSummary: "picked simple"},
		{name: "a crash still fails", role: "triage", reply: `{"workflow":"simple"}`, exit: 2,
			wantCalls: 1, wantFailure: "triage exited with code 2"},
		{name: "other roles are re-asked", role: "executor", reply: `{"workflow":"simple"}`,
			wantCalls: 2, wantFailure: "no SIGNAL BLOCK in executor output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeRunner{do: func(inv runner.Invocation) runner.Result {
				return runner.Result{Output: tt.reply, ExitCode: tt.exit}
			}}
			dir := t.TempDir()
			inv := runner.Invocation{Role: tt.role, Item: "i", Step: "i/work/" + tt.role + "#1", Attempt: 1,
				OutputPath: filepath.Join(dir, "out.md"), LogPath: filepath.Join(dir, "log")}
			got, err := (&Engine{}).invoke(context.Background(), fake, inv, nil, 0)
			sig, failure := got.sig, got.failure
			if err != nil {
				t.Fatal(err)
			}
			if len(fake.calls) != tt.wantCalls {
				t.Errorf("calls %v, want %d", fake.calls, tt.wantCalls)
			}
			if (tt.wantFailure == "") != (failure == "") || !strings.Contains(failure, tt.wantFailure) {
				t.Fatalf("failure %q, want %q", failure, tt.wantFailure)
			}
			if failure != "" {
				return
			}
			if sig.Result != tt.wantResult || sig.LoopSummary != tt.wantSummary {
				t.Errorf("signal %+v, want Result %q and Loop Summary %q", sig, tt.wantResult, tt.wantSummary)
			}
			if sig.Confidence != nil && tt.name != "a usable block wins" {
				t.Errorf("a made-up signal must not carry a confidence (it could escalate): %d", *sig.Confidence)
			}
		})
	}
}

// TestInvokeJudge: a judge's JSON judgement is its Rating and stands in for
// a missing SIGNAL BLOCK; an unusable one is re-asked once, then fails the
// step; a reply with only a usable block is taken as it is.
func TestInvokeJudge(t *testing.T) {
	rubric := eval.Rubric{"correctness": "it works", "tests": "it is tested"}
	good := "```json\n{\"scores\":{\"correctness\":9,\"tests\":7},\"overall\":8,\"reasoning\":\"solid\"}\n```\n"
	bad := `{"scores":{"correctness":11},"overall":8}`
	block := "### SIGNAL BLOCK\n- Agent: judge\n- Result: PASS\n- Confidence: 9\n- Rating: 9\n"
	tests := []struct {
		name        string
		replies     []string
		wantCalls   int
		wantResult  signal.Result
		wantRating  int
		wantScores  bool
		wantFailure string
	}{
		{"json alone", []string{good}, 1, signal.Pass, 8, true, ""},
		{"json alone below the pass rating", []string{strings.Replace(good, `"overall":8`, `"overall":3`, 1)}, 1, signal.Insufficient, 3, true, ""},
		{"json rates over the block", []string{good + block}, 1, signal.Pass, 8, true, ""},
		{"block alone", []string{block}, 1, signal.Pass, 9, false, ""},
		{"bad json re-asked", []string{bad + block, good + block}, 2, signal.Pass, 8, true, ""},
		{"bad json twice fails", []string{bad + block, bad + block}, 2, "", 0, false, "unusable judgement in judge output"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prompts []string
			fake := &fakeRunner{do: func(inv runner.Invocation) runner.Result {
				prompts = append(prompts, inv.Text())
				return runner.Result{Output: tt.replies[len(prompts)-1]}
			}}
			dir := t.TempDir()
			inv := runner.Invocation{Role: "judge", Item: "i", Step: "i/work/judge#1", Attempt: 1,
				OutputPath: filepath.Join(dir, "out.md"), LogPath: filepath.Join(dir, "log")}
			e := &Engine{d: Deps{Config: config.Default()}}
			got, err := e.invoke(context.Background(), fake, inv, rubric, 8)
			if err != nil {
				t.Fatal(err)
			}
			if len(prompts) != tt.wantCalls || (tt.wantFailure == "") != (got.failure == "") || !strings.Contains(got.failure, tt.wantFailure) {
				t.Fatalf("%d calls, failure %q; want %d, %q", len(prompts), got.failure, tt.wantCalls, tt.wantFailure)
			}
			if len(prompts) == 2 && !strings.Contains(prompts[1], "Your judgement could not be used") {
				t.Errorf("re-ask prompt does not say why: %q", prompts[1])
			}
			if got.failure != "" {
				return
			}
			if got.sig.Result != tt.wantResult || got.sig.Rating == nil || *got.sig.Rating != tt.wantRating || (got.judgement != nil) != tt.wantScores {
				t.Errorf("signal %+v judgement %+v", got.sig, got.judgement)
			}
		})
	}
}
