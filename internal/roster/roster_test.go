package roster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/runner"
)

// fake is a runner whose program may be missing.
type fake struct {
	missing bool
	got     runner.Invocation
}

func (f *fake) Name() string              { return "fake" }
func (f *fake) Capabilities() runner.Caps { return runner.Caps{} }
func (f *fake) Run(_ context.Context, inv runner.Invocation) (runner.Result, error) {
	f.got = inv
	return runner.Result{}, nil
}
func (f *fake) Locate() error {
	if f.missing {
		return errors.New("fake: program not found")
	}
	return nil
}

// newRoster has the built-in roles, a "fake" runner type whose builds it
// counts, and defaults.runner fake.
func newRoster(t *testing.T, missing bool) (*Roster, *int) {
	t.Helper()
	roles, err := role.Load("")
	if err != nil {
		t.Fatal(err)
	}
	built := 0
	reg := runner.NewRegistry()
	reg.Register("fake", func(runner.Settings) (runner.Runner, error) { built++; return &fake{missing: missing}, nil })
	cfg := config.Default()
	cfg.Defaults.Runner = "fake"
	return &Roster{Config: cfg, Runners: reg, Roles: roles, Bus: event.NewBus(nil), State: &State{}}, &built
}

// TestFor: a role's own runner wins over --runner, which wins over
// defaults.runner; --model applies where the role names no model.
func TestFor(t *testing.T) {
	r, _ := newRoster(t, false)
	r.Config.Roles = map[string]config.RoleConfig{"coder": {Runner: "claude", Model: "opus"}, "auditor": {Runner: "codex"}}
	tests := []struct {
		role        string
		f           Flags
		name, model string
		from        string
	}{
		{"planner", Flags{}, "fake", "", "defaults.runner"},
		{"planner", Flags{Runner: "gemini", Model: "pro"}, "gemini", "pro", "--runner"},
		{"coder", Flags{Runner: "gemini", Model: "pro"}, "claude", "opus", "roles.coder.runner"},
		{"auditor", Flags{Runner: "gemini", Model: "pro"}, "codex", "pro", "roles.auditor.runner"},
	}
	for _, tt := range tests {
		name, model, from := r.For(tt.f, tt.role)
		if name != tt.name || model != tt.model || from != tt.from {
			t.Errorf("For(%+v, %s) = %s, %s, %s; want %s, %s, %s", tt.f, tt.role, name, model, from, tt.name, tt.model, tt.from)
		}
	}
}

// TestCheckBuildsOnceForTheRun: the runner Check built is the one the
// run takes, once; a later take builds a new one.
func TestCheckBuildsOnceForTheRun(t *testing.T) {
	r, built := newRoster(t, false)
	if err := r.Check(Flags{}, true); err != nil {
		t.Fatal(err)
	}
	if *built != 1 {
		t.Fatalf("Check built %d runners, want 1 (every role runs on fake)", *built)
	}
	if _, err := r.Runner("fake", 0); err != nil || *built != 1 {
		t.Errorf("Runner: err %v, %d builds; want the checked runner taken", err, *built)
	}
	if _, err := r.Runner("fake", 0); err != nil || *built != 2 {
		t.Errorf("Runner again: err %v, %d builds; want a new one", err, *built)
	}
}

// TestCheckRefuses: each refusal names where the setting is.
func TestCheckRefuses(t *testing.T) {
	tests := []struct {
		name    string
		missing bool
		locate  bool
		set     func(*config.Config)
		want    string // "" for no error
	}{
		{"unknown role", false, true, func(c *config.Config) { c.Roles = map[string]config.RoleConfig{"codr": {Runner: "fake"}} },
			"roles.codr: no such role"},
		{"unknown type", false, true, func(c *config.Config) { c.Runners = map[string]config.RunnerConfig{"x": {Type: "nope"}} },
			`runners.x.type: unknown runner type "nope"`},
		{"missing program", true, true, func(*config.Config) {}, "defaults.runner: fake: program not found"},
		{"missing program not looked for", true, false, func(*config.Config) {}, ""},
		{"auto without candidates", false, true, func(c *config.Config) { c.Defaults.Runner = config.Auto },
			"runner auto needs selector.candidates"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newRoster(t, tt.missing)
			tt.set(&r.Config)
			err := r.Check(Flags{}, tt.locate)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("err = %v, want none", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestRunnerTimeout: a runner's own timeout replaces defaults.timeout
// unless the run has --timeout.
func TestRunnerTimeout(t *testing.T) {
	r, _ := newRoster(t, false)
	r.Config.Runners = map[string]config.RunnerConfig{"fake": {Timeout: config.Duration(time.Minute)}}
	for _, tt := range []struct {
		flag time.Duration
		want time.Duration
	}{{0, time.Minute}, {time.Hour, 0}} {
		rn, err := r.Runner("fake", tt.flag)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rn.Run(context.Background(), runner.Invocation{}); err != nil {
			t.Fatal(err)
		}
		inner := rn
		if w, ok := rn.(withTimeout); ok {
			inner = w.Runner
		}
		if got := inner.(*fake).got.Timeout; got != tt.want {
			t.Errorf("--timeout %v: the step's timeout is %v, want %v", tt.flag, got, tt.want)
		}
	}
}
