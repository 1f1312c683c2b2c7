package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/agent"
	"github.com/cadre-dev/cadre/internal/cli"
	"github.com/cadre-dev/cadre/internal/modelsim"
	"github.com/cadre-dev/cadre/internal/store"
)

func TestNewCmdBenchOptions(t *testing.T) {
	tests := []struct {
		args    string
		want    cli.BenchOptions
		wantErr string
	}{
		{"--runners a,b", cli.BenchOptions{Runners: []string{"a", "b"}, Repeat: 1}, ""},
		{"executor architect --runners a --repeat 3 --judge j --json --new",
			cli.BenchOptions{Roles: []string{"executor", "architect"}, Runners: []string{"a"}, Repeat: 3, Judge: "j", JSON: true, New: true}, ""},
		{"executor", cli.BenchOptions{Roles: []string{"executor"}, Repeat: 1}, ""},
		{"--runners a,,b", cli.BenchOptions{}, "--runners: empty runner name"},
		{"--runners a --repeat 0", cli.BenchOptions{}, "--repeat 0: want 1 or more"},
	}
	for _, tt := range tests {
		got := parsedOptions(t, cli.NewCmdBench, tt.args, tt.wantErr)
		if got == nil {
			continue
		}
		if got.Roles == nil {
			got.Roles = []string{}
		}
		if tt.want.Roles == nil {
			tt.want.Roles = []string{}
		}
		if !slices.Equal(got.Roles, tt.want.Roles) || !slices.Equal(got.Runners, tt.want.Runners) || got.Repeat != tt.want.Repeat ||
			got.Judge != tt.want.Judge || got.JSON != tt.want.JSON || got.New != tt.want.New {
			t.Errorf("%q: opts = %+v, want %+v", tt.args, *got, tt.want)
		}
	}
}

// The architect's answers: the good one has every section the built-in
// architect case requires, the bad one leaves out Risks.
const (
	goodDesign = `## Approach
A token bucket per API key in Redis (GOOD-DESIGN), shared by the replicas.
## Files
limiter.go, middleware.go.
## Interfaces
type Limiter interface { Allow(ctx, key) (bool, time.Duration, error) }
## Data Flow
Middleware asks Limiter; 429 with Retry-After when refused.
## Edge Cases
Redis down: fail open and log.
## Test Strategy
Table tests of the bucket; an integration test with three replicas.
## Risks
Clock skew between replicas.
`
	badDesign = `## Approach
Count requests in memory.
## Interfaces
func Allow(key string) bool
## Edge Cases
None.
## Test Strategy
Manual testing.
`
	signalBlock = `
### SIGNAL BLOCK
- Agent: architect
- Result: SUCCESS
- Loop Summary: designed the rate limiter
- Confidence: 8
- Next: executor
- Context: see the design
`
)

// simScenario is a modelsim scenario answering every request with text.
func simScenario(t *testing.T, convs ...map[string]any) modelsim.Scenario {
	t.Helper()
	data, err := json.Marshal(map[string]any{"conversations": convs})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := modelsim.Parse("sim.yaml", data) // JSON is YAML
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func startSim(t *testing.T, sc modelsim.Scenario) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := modelsim.Start(ctx, "127.0.0.1:0", modelsim.New(sc, io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); srv.Close() })
	return srv.URL
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	c := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=T"}, args...)...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestBenchRanksAndFeedsTheSelector runs cadre bench end to end: two
// anthropic runners on two modelsim servers answer the architect case, one
// well and one without a required section, and a judge on a third scores;
// the leaderboard ranks the good one first, the score store holds every
// run, and a later cadre run with runner auto picks the good one.
func TestBenchRanksAndFeedsTheSelector(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	arch := map[string]any{"role": "architect"}
	good := startSim(t, simScenario(t, map[string]any{"name": "good", "match": arch, "turns": []any{map[string]any{"text": goodDesign + signalBlock}}}))
	bad := startSim(t, simScenario(t, map[string]any{"name": "bad", "match": arch, "turns": []any{map[string]any{"text": badDesign + signalBlock}}}))
	judge := startSim(t, simScenario(t,
		map[string]any{"name": "high", "match": map[string]any{"contains": "GOOD-DESIGN"}, "turns": []any{map[string]any{
			"text": `{"scores":{"completeness":9,"feasibility":9,"structure":8,"clarity":9},"overall":9,"reasoning":"complete and shared across replicas"}`}}},
		map[string]any{"name": "low", "match": map[string]any{}, "turns": []any{map[string]any{
			"text": `{"scores":{"completeness":2,"feasibility":2,"structure":2,"clarity":2},"overall":2,"reasoning":"in memory only"}`}}}))

	repo := t.TempDir()
	cfg := `defaults: {runner: fake}
roles:
  judge: {runner: judge}
runners:
  good: {type: anthropic, url: "` + good + `"}
  bad: {type: anthropic, url: "` + bad + `"}
  judge: {type: anthropic, url: "` + judge + `"}
  fake: {type: script, scenario: scenario.yaml}
`
	writeFile(t, filepath.Join(repo, "cadre.yaml"), cfg)
	writeFile(t, filepath.Join(repo, "scenario.yaml"), `rules:
  - role: executor
    actions:
      - write: {path: limiter.go, content: "package limiter\n"}
    signal: {result: SUCCESS, confidence: 9, next: critic}
  - role: "*"
    signal: {result: PASS, confidence: 9, rating: 9, next: Done}
`)
	writeFile(t, filepath.Join(repo, "tasks", "a.md"), "---\nstage: code\nworkflow: standard\n---\n# Rate limiter\n\n## Goal\nLimit requests per key.\n")
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-qm", "start")

	code, stdout, stderr := runCadreEnv(t, repo, "bench", "architect", "--runners", "bad,good", "--repeat", "2", "--json")
	if code != 0 {
		t.Fatalf("cadre bench exited %d\n%s\n%s", code, stderr, stdout)
	}
	var board struct {
		Run  string
		Rows []struct {
			Role, Runner string
			Cases        int
			PassRate     float64 `json:"pass_rate"`
			MeanScore    float64 `json:"mean_score"`
			MeanCostUSD  float64 `json:"mean_cost_usd"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &board); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	if len(board.Rows) != 2 || board.Rows[0].Runner != "good" || board.Rows[1].Runner != "bad" {
		t.Fatalf("leaderboard %+v, want good first, then bad\n%s", board.Rows, stderr)
	}
	if g, b := board.Rows[0], board.Rows[1]; g.PassRate != 1 || g.MeanScore != 0.9 || g.Cases != 2 || b.PassRate != 0 || b.MeanScore != 0 {
		t.Errorf("rows %+v, want good passing with 0.9 and bad failing with 0", board.Rows)
	}
	if !regexp.MustCompile(`(?m)^\[\d/4\] architect/rate-limiter bad: failed section Risks`).MatchString(stderr) {
		t.Errorf("progress does not say bad missed the Risks section:\n%s", stderr)
	}

	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(repo, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	evs, err := st.Evaluations(ctx, store.EvalFilter{Source: store.SourceBench, Role: "architect"}, 0)
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, e := range evs {
		steps = append(steps, e.StepID)
		if e.RunID != board.Run || e.Kind != store.KindBench || e.Usage == nil || e.Usage.InputTokens == 0 {
			t.Errorf("evaluation %+v: want kind bench of run %s with the agent's usage", e, board.Run)
		}
	}
	slices.Sort(steps)
	if want := []string{"architect/rate-limiter/bad#1", "architect/rate-limiter/bad#2", "architect/rate-limiter/good#1", "architect/rate-limiter/good#2"}; !slices.Equal(steps, want) {
		t.Errorf("score store steps %v, want %v", steps, want)
	}

	// The selector now reads the benchmark: architect on runner auto
	// chooses good though bad is listed first.
	auto := strings.Replace(cfg, "roles:\n", "roles:\n  architect: {runner: auto}\n  critic: {runner: fake}\n", 1)
	writeFile(t, filepath.Join(repo, "cadre.yaml"), auto+"selector: {candidates: [bad, good], min_samples: 2}\n")
	git(t, repo, "commit", "-qam", "auto")
	code, stdout, stderr = runCadreEnv(t, repo, "run", "--json")
	if code != 0 {
		t.Fatalf("cadre run exited %d\n%s\n%s", code, stderr, stdout)
	}
	if !regexp.MustCompile(`"type":"stepStarted"[^\n]*"role":"architect"[^\n]*"runner":"good"`).MatchString(stdout) {
		t.Errorf("architect's stepStarted does not name runner good:\n%s", stdout)
	}
	_, stdout, _ = runCadreEnv(t, repo, "status")
	if !regexp.MustCompile(`(?m)^  auto: architect chose good \(good: 0.90 quality`).MatchString(stdout) {
		t.Errorf("status has no auto line choosing good:\n%s", stdout)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runCadreEnv runs cadre in dir in-process with the test's environment.
func runCadreEnv(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := cli.NewFactory()
	f.IO = cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	f.Dir = func() (string, error) { return dir, nil }
	f.Crash = func(string) {}
	code = cli.Execute(f, args)
	return code, out.String(), errOut.String()
}

// Every built-in role has a built-in case: cadre bench runs them all
// against a scripted contestant, judged by a scripted judge, and the
// leaderboard has a row for each role.
func TestBenchRunsForEveryRole(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	repo := t.TempDir()
	writeFile(t, filepath.Join(repo, "cadre.yaml"), `defaults: {runner: fake}
runners:
  fake: {type: script, scenario: scenario.yaml}
  scorer: {type: exec, command: ./judge.sh}
`)
	// The contestant answers every role the same way; what matters here
	// is that every role's case runs and is evaluated.
	writeFile(t, filepath.Join(repo, "scenario.yaml"), `rules:
  - role: "*"
    say: |
      ## Summary
      Done as asked.
    signal: {result: SUCCESS, confidence: 8, rating: 8, verdict: pass}
`)
	// The judge scores every criterion its prompt names, 6 of 10.
	writeFile(t, filepath.Join(repo, "judge.sh"), `#!/bin/sh
shape=$(grep -o '^{"scores":{[^}]*}' | tail -n 1 | sed 's/:N/:6/g')
printf '%s},"overall":6,"reasoning":"adequate"}\n' "$shape"
`)
	if err := os.Chmod(filepath.Join(repo, "judge.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-qm", "start")

	roles := agent.Roles()
	var names []string
	for _, r := range roles {
		names = append(names, r.Name)
	}
	args := append(append([]string{"bench"}, names...), "--runners", "fake", "--judge", "scorer", "--json")
	code, stdout, stderr := runCadreEnv(t, repo, args...)
	if code != 0 {
		t.Fatalf("cadre bench of every role exited %d\n%s\n%s", code, stderr, stdout)
	}
	var board struct {
		Rows []struct {
			Role, Runner string
			Cases        int
			MeanScore    float64 `json:"mean_score"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &board); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	ran, scored := map[string]int{}, 0
	for _, r := range board.Rows {
		ran[r.Role] += r.Cases
		if r.MeanScore > 0 {
			scored++
		}
	}
	// Work that passed its case's checks went on to the judge.
	if scored == 0 {
		t.Errorf("no case was scored by the judge:\n%s", stderr)
	}
	for _, n := range names {
		if ran[n] == 0 {
			t.Errorf("no case of role %s ran", n)
		}
	}
	if len(names) < 27 {
		t.Errorf("%d built-in roles, want 27", len(names))
	}
}
