package tui

import (
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
)

// Snapshot is a run as the journal records it (report.Summarize plus the
// completed steps per item). Events make the view quick; snapshots make it
// right: they carry what the events of this process never saw (steps of an
// earlier session of a resumed run, costs summed by the journal).
type Snapshot struct {
	Run    string
	Status string // a store run status
	Usage  event.Usage
	Items  []ItemSnapshot
}

// ItemSnapshot is one item of a Snapshot.
type ItemSnapshot struct {
	ID, Title, Stage, Status, Reason, CurrentStep string
	Attempts                                      int
	StepsDone                                     int // journaled steps completed, every kind
	Usage                                         event.Usage
	// PR is where the item's pull request stands, when known: "#7
	// following · checks failure · changes requested · conflicts".
	PR string
}

// Item is one row of the view.
type Item struct {
	ID, Title, Workflow string
	Stage, Phase, Role  string
	Runner, Model       string
	Status, Reason      string
	PR                  string // where its pull request stands (ItemSnapshot.PR)
	Step                string // the running step, or the last one started
	Attempts            int
	Usage               event.Usage
	Started, Ended      time.Time
	last                time.Time // its latest event

	doneSteps map[string]bool // steps completed, from events
	journaled int             // steps completed, from the last snapshot
	total     int             // steps expected, from the workflow
	running   bool            // a step is under way
}

// Done is how many of the item's steps have completed.
func (it *Item) Done() int { return max(len(it.doneSteps), it.journaled) }

// Total is the bar's denominator: the workflow's steps, grown to cover
// steps beyond them (another round, another plan task) and the running one.
func (it *Item) Total() int {
	t := max(it.total, it.Done())
	if it.running && t == it.Done() {
		t++
	}
	return t
}

// Ratio is the bar's filled part, 0..1; a completed item is full.
func (it *Item) Ratio() float64 {
	if it.Status == "completed" {
		return 1
	}
	if it.Total() == 0 {
		return 0
	}
	return float64(it.Done()) / float64(it.Total())
}

// state is what the view shows, built from events and snapshots.
type state struct {
	run    string
	status string
	usage  event.Usage
	notice string // the run's last warning of its own (no item's)
	items  []*Item
	byID   map[string]*Item
	steps  func(workflow, stage string) int
}

func newState(run string, steps func(string, string) int) *state {
	if steps == nil {
		steps = func(string, string) int { return 0 }
	}
	return &state{run: run, byID: map[string]*Item{}, steps: steps}
}

func (s *state) item(id string) *Item {
	it := s.byID[id]
	if it == nil {
		it = &Item{ID: id, Status: "pending", doneSteps: map[string]bool{}}
		s.byID[id] = it
		s.items = append(s.items, it)
	}
	return it
}

// apply folds one event into the state.
func (s *state) apply(e event.Event) {
	if e.Run != "" && s.run == "" {
		s.run = e.Run
	}
	switch e.Type {
	case event.RunStarted:
		s.status, s.notice = "running", ""
	case event.RunCompleted:
		s.status = e.Message
	case event.Warning:
		if e.Item == "" {
			s.notice = e.Message
		}
	}
	if e.Item == "" {
		return
	}
	it := s.item(e.Item)
	it.last = e.Time
	// taskStarted names the stage the run first saw the item in, which a
	// resumed item has left: it only fills a stage not known yet.
	if e.Stage != "" && e.Stage != "completed" && (e.Type != event.TaskStarted || it.Stage == "") {
		it.Stage = e.Stage
	}
	switch e.Type {
	case event.TaskStarted:
		title, wf := parseTaskStarted(e)
		if it.Title == "" {
			it.Title = title
		}
		it.Workflow = wf
		it.Status, it.Reason, it.Ended = "running", "", time.Time{}
		if it.Started.IsZero() {
			it.Started = e.Time
		}
		// A runner item's taskStarted names the stage the run first saw
		// it in, also when resumed (its journaled steps are replayed from
		// there), so the total covers the earlier sessions' steps too.
		it.total = s.steps(wf, e.Stage)
	case event.StepStarted:
		it.Status, it.running, it.Step = "running", true, e.Step
		it.Phase = e.Phase
		it.Role, it.Runner, it.Model = e.Role, e.Runner, e.Model
		if e.Role == "" {
			it.Role = e.Message // a deterministic action: checks, commit, ...
		}
	case event.StepCompleted:
		it.running = false
		it.doneSteps[e.Step] = true
		if e.Usage != nil {
			// Shown at once; the next snapshot replaces it with the
			// journal's sum, which also covers earlier sessions.
			it.Usage = it.Usage.Add(*e.Usage)
		}
	case event.StepFailed:
		it.running = false
	case event.TaskCompleted:
		it.Status, it.running, it.Ended = "completed", false, e.Time
	case event.TaskFailed:
		it.Status, it.running, it.Ended, it.Reason = "failed", false, e.Time, e.Error
	case event.ItemPaused:
		it.Status, it.running, it.Reason = "paused", false, e.Message
	case event.ItemResumed:
		it.Status, it.Reason = "running", ""
	case event.RunnerStopped:
		if it.Status == "running" {
			it.Status, it.running = "stopped", false
		}
	}
}

// parseTaskStarted reads an item's title and workflow from its taskStarted
// event: the stage pipeline's carries the stage and the title; a
// declarative workflow's says "Title (workflow)".
func parseTaskStarted(e event.Event) (title, workflow string) {
	if e.Stage != "" {
		return e.Message, "runner"
	}
	if i := strings.LastIndex(e.Message, " ("); i >= 0 && strings.HasSuffix(e.Message, ")") {
		return e.Message[:i], e.Message[i+2 : len(e.Message)-1]
	}
	return e.Message, ""
}

// snapshot folds a journal reading into the state: the journal is right
// about status, stage, attempts, costs and completed steps.
func (s *state) snapshot(sn Snapshot) {
	if s.run == "" {
		s.run = sn.Run
	}
	if sn.Status != "" {
		s.status = sn.Status
	}
	s.usage = sn.Usage
	for _, is := range sn.Items {
		it := s.item(is.ID)
		if is.Title != "" {
			it.Title = is.Title
		}
		if is.Stage != "" {
			it.Stage = is.Stage
		}
		if is.Status != "" {
			it.Status = is.Status
		}
		if is.Status != "running" {
			it.running = false
		}
		it.Reason = is.Reason
		if is.PR != "" {
			it.PR = is.PR
		}
		if is.CurrentStep != "" {
			it.Step = is.CurrentStep
		}
		it.Attempts = is.Attempts
		it.Usage = is.Usage
		it.journaled = is.StepsDone
	}
}

// paused lists the items waiting for a human (or a runner), in row order.
func (s *state) paused() []*Item {
	var out []*Item
	for _, it := range s.items {
		if it.Status == "paused" {
			out = append(out, it)
		}
	}
	return out
}

// counts tallies the items by status.
func (s *state) counts() map[string]int {
	c := map[string]int{}
	for _, it := range s.items {
		c[it.Status]++
	}
	return c
}
