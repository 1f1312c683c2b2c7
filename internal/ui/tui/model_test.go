package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// fakeActions records what the view asked of the run.
type fakeActions struct {
	stops    []bool
	approved []string // "item approved|rejected note"
	log      string
}

func (f *fakeActions) Stop(now bool) error { f.stops = append(f.stops, now); return nil }
func (f *fakeActions) Approve(item string, ok bool, note string) error {
	verb := "rejected"
	if ok {
		verb = "approved"
	}
	f.approved = append(f.approved, item+" "+verb+" "+note)
	return nil
}
func (f *fakeActions) Log(item, step string) (string, error) {
	if f.log == "" {
		return "", errors.New("no such file")
	}
	return f.log, nil
}

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func newModel(t *testing.T, cfg Config) (Model, *fakeActions) {
	t.Helper()
	flows, err := workflow.LoadDefs("", nil)
	if err != nil {
		t.Fatal(err)
	}
	act := &fakeActions{}
	cfg.Actions = act
	cfg.Steps = StepsFunc(flows)
	cfg.Now = func() time.Time { return t0.Add(90 * time.Second) }
	return New(cfg), act
}

// send feeds msgs to m, running each command it returns (one level deep,
// as the program would) and feeding its message back.
func send(t *testing.T, m Model, msgs ...tea.Msg) (Model, []tea.Msg) {
	t.Helper()
	var out []tea.Msg
	for _, msg := range msgs {
		next, cmd := m.Update(msg)
		m = next.(Model)
		if cmd == nil {
			continue
		}
		res := cmd()
		out = append(out, res)
		switch res.(type) {
		case actionMsg, logMsg:
			next, _ = m.Update(res)
			m = next.(Model)
		}
	}
	return m, out
}

func ev(typ, item string, f func(*event.Event)) event.Event {
	e := event.Event{Time: t0, Run: "r1", Type: typ, Item: item}
	if f != nil {
		f(&e)
	}
	return e
}

func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

func typeText(s string) []tea.Msg {
	var out []tea.Msg
	for _, r := range s {
		out = append(out, key(string(r)))
	}
	return out
}

// rowOf is the rendered line of item id.
func rowOf(t *testing.T, m Model, id string) string {
	t.Helper()
	for _, l := range strings.Split(plain(m), "\n") {
		if strings.Contains(l, id+" ") && strings.Contains(l, "/") {
			return l
		}
	}
	t.Fatalf("no row for %s in:\n%s", id, plain(m))
	return ""
}

// plain is the view without its styles.
func plain(m Model) string { return ansi.Strip(m.Render()) }

func started(item, title, stage string) event.Event {
	return ev(event.TaskStarted, item, func(e *event.Event) { e.Stage, e.Message = stage, title })
}

func step(typ, item, stage, role string, n int) event.Event {
	return ev(typ, item, func(e *event.Event) {
		e.Stage, e.Phase, e.Role, e.Runner, e.Model = stage, stage, role, "fake", "m1"
		e.Step = item + "/" + stage + "/" + role + "#1"
		if typ == event.StepCompleted {
			e.Usage = &event.Usage{InputTokens: 1000, OutputTokens: 200, CostUSD: 0.01}
		}
	})
}

func TestRowsAppearAndBarAdvancesWithCompletedSteps(t *testing.T) {
	m, _ := newModel(t, Config{})
	if strings.Contains(plain(m), "alpha") {
		t.Fatal("a row before any event")
	}
	m, _ = send(t, m, EventsMsg{ev(event.RunStarted, "", nil), started("alpha", "Add login", "plan")})
	row := rowOf(t, m, "alpha")
	for _, want := range []string{"Add login", "runner", "running", "░░░░░░░░░░ 0/4", "1m30s"} {
		if !strings.Contains(row, want) {
			t.Errorf("row %q lacks %q", row, want)
		}
	}

	m, _ = send(t, m, EventsMsg{step(event.StepStarted, "alpha", "plan", "planner", 1)})
	if row := rowOf(t, m, "alpha"); !strings.Contains(row, "planner → fake/m1") || !strings.Contains(row, " 0/4") {
		t.Errorf("while the planner runs: %q", row)
	}
	m, _ = send(t, m, EventsMsg{step(event.StepCompleted, "alpha", "plan", "planner", 1)})
	if row := rowOf(t, m, "alpha"); !strings.Contains(row, "███░░░░░░░ 1/4") || !strings.Contains(row, "1.0k/200") {
		t.Errorf("after the planner: %q", row)
	}
	m, _ = send(t, m, EventsMsg{step(event.StepStarted, "alpha", "code", "coder", 1), step(event.StepCompleted, "alpha", "code", "coder", 1)})
	if row := rowOf(t, m, "alpha"); !strings.Contains(row, "█████░░░░░ 2/4") || !strings.Contains(row, "coder → fake/m1") {
		t.Errorf("after the coder: %q", row)
	}
	m, _ = send(t, m, EventsMsg{ev(event.TaskCompleted, "alpha", func(e *event.Event) { e.Stage = "completed"; e.Time = t0.Add(time.Minute) })})
	row = rowOf(t, m, "alpha")
	if !strings.Contains(row, "██████████ 4/4") || !strings.Contains(row, "completed") || !strings.Contains(row, "1m0s") {
		t.Errorf("after completion (bar full, elapsed frozen at the end): %q", row)
	}
}

func TestDeclarativeWorkflowBarCountsItsStepsAndGrowsPastThem(t *testing.T) {
	m, _ := newModel(t, Config{})
	m, _ = send(t, m, EventsMsg{ev(event.TaskStarted, "b", func(e *event.Event) { e.Message = "Refactor (standard)" })})
	row := rowOf(t, m, "b")
	// standard: architect, executor, one critic round, commit.
	if !strings.Contains(row, "Refactor") || !strings.Contains(row, "standard") || !strings.Contains(row, " 0/4") {
		t.Fatalf("row %q", row)
	}
	var evs EventsMsg
	for i, id := range []string{"architect#1", "executor#1", "critic#1", "executor#2"} {
		_ = i
		evs = append(evs, ev(event.StepCompleted, "b", func(e *event.Event) { e.Step = "b/work/" + id }))
	}
	evs = append(evs, ev(event.StepStarted, "b", func(e *event.Event) { e.Step = "b/work/critic#2"; e.Role = "critic" }))
	m, _ = send(t, m, evs)
	if row := rowOf(t, m, "b"); !strings.Contains(row, " 4/5") {
		t.Errorf("a second review round grows the bar instead of overflowing it: %q", row)
	}
}

func TestSnapshotCarriesJournaledStepsCostAndBudget(t *testing.T) {
	m, _ := newModel(t, Config{Run: "r1", Budget: 2})
	m, _ = send(t, m, SnapshotMsg{Run: "r1", Status: "running", Usage: event.Usage{InputTokens: 5000, OutputTokens: 800, CostUSD: 0.5},
		Items: []ItemSnapshot{{ID: "c", Title: "Resumed", Stage: "audit", Status: "running", Attempts: 1, StepsDone: 2,
			Usage: event.Usage{InputTokens: 5000, OutputTokens: 800, CostUSD: 0.5}}}})
	// A resumed item's taskStarted names the stage the run first saw it in.
	m, _ = send(t, m, EventsMsg{started("c", "Resumed", "plan")})
	out := plain(m)
	row := rowOf(t, m, "c")
	// Two steps done in an earlier session; the audit and the commit left.
	if !strings.Contains(row, " 2/4") || !strings.Contains(row, "$0.5000") || !strings.Contains(row, "5.0k/800") {
		t.Errorf("row %q", row)
	}
	if !strings.Contains(out, "budget left $1.5000 of $2.00") || !strings.Contains(out, "cost $0.5000") {
		t.Errorf("footer lacks the totals and budget:\n%s", out)
	}
}

func TestPausedItemsAreListedWithWhyAndApproveFormSendsTheAnswer(t *testing.T) {
	m, act := newModel(t, Config{})
	m, _ = send(t, m, EventsMsg{started("a1", "One", "code"), started("p1", "Two", "code"),
		ev(event.ItemPaused, "p1", func(e *event.Event) { e.Message = "coder asked for clarification: which API?" })})
	out := plain(m)
	if !strings.Contains(out, "paused: p1: coder asked for clarification: which API?") || !strings.Contains(out, "1 paused") {
		t.Fatalf("footer lacks the paused item:\n%s", out)
	}
	// A paused item's clock stops at its pause; a running one's goes on.
	if p1, a1 := rowOf(t, m, "p1"), rowOf(t, m, "a1"); !strings.Contains(p1, " 0s ") || !strings.Contains(a1, " 1m30s ") {
		t.Errorf("elapsed: paused %q, running %q", p1, a1)
	}
	// a on a running item answers the first paused one.
	m, _ = send(t, m, key("a"))
	if !strings.Contains(plain(m), "answer p1  [x] approve  [ ] reject") {
		t.Fatalf("no approve form:\n%s", plain(m))
	}
	msgs := append(typeText("use v2"), key("enter"))
	m, _ = send(t, m, msgs...)
	if len(act.approved) != 1 || act.approved[0] != "p1 approved use v2" {
		t.Fatalf("approve calls = %q", act.approved)
	}
	if !strings.Contains(plain(m), "approved p1; cadre resume continues it") {
		t.Errorf("no confirmation:\n%s", plain(m))
	}

	// tab toggles to reject; esc leaves without an answer.
	m, _ = send(t, m, key("down"), key("a"), key("tab"))
	if !strings.Contains(plain(m), "[ ] approve  [x] reject") {
		t.Fatalf("tab did not toggle:\n%s", plain(m))
	}
	m, _ = send(t, m, key("esc"))
	m, _ = send(t, m, key("a"), key("tab"), key("n"), key("o"), key("enter"))
	if len(act.approved) != 2 || act.approved[1] != "p1 rejected no" {
		t.Errorf("approve calls = %q", act.approved)
	}
}

func TestApproveWithoutPausedItemSaysSo(t *testing.T) {
	m, act := newModel(t, Config{})
	m, _ = send(t, m, EventsMsg{started("a1", "One", "code")}, key("a"))
	if len(act.approved) != 0 || !strings.Contains(plain(m), "no item is paused") {
		t.Errorf("approved %q; view:\n%s", act.approved, plain(m))
	}
}

func TestStopKeys(t *testing.T) {
	m, act := newModel(t, Config{})
	m, _ = send(t, m, EventsMsg{started("a1", "One", "code")}, key("q"))
	if len(act.stops) != 1 || act.stops[0] {
		t.Fatalf("q: stops = %v, want one graceful", act.stops)
	}
	if !strings.Contains(plain(m), "stopping: running steps finish") {
		t.Errorf("no stopping notice:\n%s", plain(m))
	}
	m, _ = send(t, m, key("q"))
	if len(act.stops) != 1 {
		t.Errorf("a second q asked again: %v", act.stops)
	}
	m, _ = send(t, m, key("Q"))
	if len(act.stops) != 2 || !act.stops[1] {
		t.Errorf("Q: stops = %v, want graceful then now", act.stops)
	}
	// The end of the run ends the view.
	_, out := send(t, m, DoneMsg{})
	if len(out) != 1 || out[0] != (tea.QuitMsg{}) {
		t.Errorf("DoneMsg gave %v, want quit", out)
	}
}

func TestWatcherQuitsOnQWithoutStoppingTheRun(t *testing.T) {
	m, act := newModel(t, Config{Watch: true})
	m, _ = send(t, m, EventsMsg{started("a1", "One", "code")}, DoneMsg{})
	if strings.Contains(plain(m), "stopping") {
		t.Error("the watcher claims to stop")
	}
	_, out := send(t, m, key("q"))
	if len(act.stops) != 0 || len(out) != 1 || out[0] != (tea.QuitMsg{}) {
		t.Errorf("q: stops %v, msgs %v; want no stop and a quit", act.stops, out)
	}
	_, _ = send(t, m, key("Q"))
	if len(act.stops) != 1 || !act.stops[0] {
		t.Errorf("Q in a watcher: stops %v, want now", act.stops)
	}
}

func TestEnterFollowsTheSelectedItemsStepLog(t *testing.T) {
	m, act := newModel(t, Config{})
	act.log = "line one\nline two of the coder\n"
	m, _ = send(t, m, EventsMsg{started("a1", "One", "code"), started("b2", "Two", "code"),
		step(event.StepStarted, "b2", "code", "coder", 1)})
	m, _ = send(t, m, key("down"), key("enter"))
	out := plain(m)
	if !strings.Contains(out, "log of b2  b2/code/coder#1") || !strings.Contains(out, "line two of the coder") {
		t.Fatalf("log view:\n%s", out)
	}
	m, _ = send(t, m, key("esc"))
	if !strings.Contains(plain(m), "ITEM") {
		t.Errorf("esc did not go back:\n%s", plain(m))
	}
}

func TestStepCountOfBuiltins(t *testing.T) {
	flows, err := workflow.LoadDefs("", nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := StepsFunc(flows)
	for _, c := range []struct {
		wf, stage string
		want      int
	}{{"runner", "plan", 4}, {"runner", "code", 3}, {"runner", "audit", 2}, {"standard", "", 4}, {"no-such", "", 0}} {
		if got := steps(c.wf, c.stage); got != c.want {
			t.Errorf("steps(%s, %s) = %d, want %d", c.wf, c.stage, got, c.want)
		}
	}
}

// A snapshot's pull requests are listed under the rows, each with where
// it stands; one a later snapshot does not know keeps its last word.
func TestSnapshotShowsPullRequests(t *testing.T) {
	m, _ := newModel(t, Config{Run: "r1", Watch: true})
	m, _ = send(t, m, SnapshotMsg{Run: "r1", Status: "completed", Items: []ItemSnapshot{
		{ID: "7", Title: "Fix", Status: "completed", PR: "#12 following (open, checks failure, review changes requested, conflicts with its base)"},
		{ID: "8", Title: "Other", Status: "completed"}}})
	out := plain(m)
	if !strings.Contains(out, "pull request of 7: #12 following (open, checks failure, review changes requested, conflicts with its base)") {
		t.Errorf("footer lacks the pull request:\n%s", out)
	}
	if strings.Contains(out, "pull request of 8") {
		t.Errorf("an item without a pull request is listed:\n%s", out)
	}
	m, _ = send(t, m, SnapshotMsg{Run: "r1", Status: "completed", Items: []ItemSnapshot{{ID: "7", Title: "Fix", Status: "completed"}}})
	if out := plain(m); !strings.Contains(out, "pull request of 7: #12 following") {
		t.Errorf("the pull request's last word was lost:\n%s", out)
	}
}

// A watched run that completed offers nothing to stop or approve; Q does
// not ask to stop it.
func TestFinishedRunOffersNoStop(t *testing.T) {
	m, act := newModel(t, Config{Watch: true})
	m, _ = send(t, m, SnapshotMsg{Run: "r1", Status: "completed", Items: []ItemSnapshot{{ID: "a1", Title: "One", Status: "completed"}}}, DoneMsg{})
	out := plain(m)
	if !strings.Contains(out, "the run is over") || strings.Contains(out, "Q stop") || strings.Contains(out, "a approve") {
		t.Errorf("a finished run's keys:\n%s", out)
	}
	m, _ = send(t, m, key("Q"))
	if len(act.stops) != 0 || !strings.Contains(plain(m), "nothing to stop") {
		t.Errorf("Q on a finished run: stops %v\n%s", act.stops, plain(m))
	}
}

// ATT is the attempt an item is on: 1 during its first, not 0.
func TestAttemptColumnCountsFromOne(t *testing.T) {
	m, _ := newModel(t, Config{Run: "r1"})
	m, _ = send(t, m, SnapshotMsg{Run: "r1", Status: "running", Items: []ItemSnapshot{
		{ID: "first", Title: "First", Status: "running"},
		{ID: "again", Title: "Again", Status: "running", Attempts: 1},
		{ID: "later", Title: "Later", Status: "pending"}}})
	for id, want := range map[string]string{"first": "1", "again": "2", "later": "-"} {
		// From the right: ATT, ELAPSED, TOKENS, COST, the bar, its count.
		row := rowOf(t, m, id)
		f := strings.Fields(row)
		if got := f[len(f)-6]; got != want {
			t.Errorf("row of %s %q: ATT %s, want %s", id, row, got, want)
		}
	}
}

// The run's own warnings (no item's) show under the rows until the run
// starts again: "waiting for an answer on the board" is gone once resumed.
func TestRunWarningShownUntilTheRunGoesOn(t *testing.T) {
	m, _ := newModel(t, Config{})
	m, _ = send(t, m, EventsMsg{ev(event.RunStarted, "", nil), ev(event.Warning, "", func(e *event.Event) { e.Message = "waiting for an answer on the board" }),
		ev(event.Warning, "a1", func(e *event.Event) { e.Message = "an item's warning" })})
	if out := plain(m); !strings.Contains(out, "waiting for an answer on the board") || strings.Contains(out, "an item's warning") {
		t.Errorf("footer:\n%s", out)
	}
	m, _ = send(t, m, EventsMsg{ev(event.RunStarted, "", nil)})
	if out := plain(m); strings.Contains(out, "waiting for an answer") {
		t.Errorf("the warning outlived the resume:\n%s", out)
	}
}
