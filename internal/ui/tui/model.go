// Package tui is cadre's live terminal view: one row per item of a run, a
// footer with the run's totals and paused items, and keys to stop the run,
// follow a step's log and answer a paused item. The Model is pure: it is
// built from events and journal snapshots sent to it as messages, and it
// acts on the run only through the Actions it is given, so its Update and
// View are tested without a terminal.
package tui

import (
	"fmt"
	"time"

	"charm.land/bubbles/v2/textinput"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/cadre-dev/cadre/internal/event"
)

// Actions are what the view's keys do to the run.
type Actions interface {
	// Stop asks the run to start no new step; now also cancels the
	// running ones (cadre stop [--now]).
	Stop(now bool) error
	// Approve answers a paused item (cadre approve [--reject] --note).
	Approve(item string, approved bool, note string) error
	// Log returns the tail of a step's log.
	Log(item, step string) (string, error)
}

// Config sets up a Model.
type Config struct {
	Run     string  // the run's id, when known before its first event
	Budget  float64 // the run's budget in dollars; 0: none
	Watch   bool    // following a run of another process: q leaves only the view
	Actions Actions
	// Steps gives the steps an item is expected to run, by workflow and
	// starting stage (see StepsFunc).
	Steps func(workflow, stage string) int
	Now   func() time.Time
}

// EventsMsg delivers run events, in publication order.
type EventsMsg []event.Event

// SnapshotMsg delivers a journal reading; it also ticks the clock, so
// elapsed times move while nothing else happens.
type SnapshotMsg Snapshot

// DoneMsg says the run is over: the view quits (a watcher stays until q).
type DoneMsg struct{}

// logMsg carries a log tail read by a command.
type logMsg struct {
	item, step, text string
	err              error
}

// actionMsg is the outcome of an action, shown in the footer.
type actionMsg struct {
	text string
	err  error
}

type mode int

const (
	modeList mode = iota
	modeLog
	modeApprove
)

// Model is the live view.
type Model struct {
	cfg      Config
	st       *state
	now      time.Time
	width    int
	height   int
	selected int
	mode     mode
	stopping string // "", "graceful" or "now"
	flash    string // the last action's outcome
	done     bool

	// log view
	logItem, logStep string
	log              viewport.Model

	// approve form
	form formState
}

// formState is the approve/reject form of one paused item.
type formState struct {
	item   string
	reject bool
	note   textinput.Model
}

// New returns a Model for cfg.
func New(cfg Config) Model {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return Model{cfg: cfg, st: newState(cfg.Run, cfg.Steps), now: cfg.Now(),
		log: viewport.New(viewport.WithWidth(120), viewport.WithHeight(24))}
}

// Init starts nothing: events, snapshots and the end of the run are sent
// to the program by its feeder.
func (m Model) Init() tea.Cmd { return nil }

// Items returns the rows, in order.
func (m Model) Items() []*Item { return m.st.items }

// Update handles a message.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.log.SetWidth(msg.Width)
		m.log.SetHeight(max(msg.Height-3, 1))
		return m, nil
	case EventsMsg:
		for _, e := range msg {
			m.st.apply(e)
		}
		m.now = m.cfg.Now()
		return m, nil
	case SnapshotMsg:
		m.st.snapshot(Snapshot(msg))
		m.now = m.cfg.Now()
		if m.mode == modeLog {
			return m, m.readLog(m.logItem, m.logStep)
		}
		return m, nil
	case DoneMsg:
		m.done = true
		if m.cfg.Watch {
			return m, nil
		}
		return m, tea.Quit
	case logMsg:
		if m.mode == modeLog && msg.item == m.logItem {
			follow := m.log.AtBottom()
			if msg.err != nil {
				m.log.SetContent(fmt.Sprintf("(no log yet for %s: %v)", msg.step, msg.err))
			} else {
				m.log.SetContent(msg.text)
			}
			if follow {
				m.log.GotoBottom()
			}
		}
		return m, nil
	case actionMsg:
		m.flash = msg.text
		if msg.err != nil {
			m.flash = "error: " + msg.err.Error()
		}
		return m, nil
	case tea.KeyPressMsg:
		switch m.mode {
		case modeLog:
			return m.updateLog(msg)
		case modeApprove:
			return m.updateForm(msg)
		}
		return m.updateList(msg)
	}
	return m, nil
}

func (m Model) updateList(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "up", "k":
		if m.selected > 0 {
			m.selected--
		}
	case "down", "j":
		if m.selected < len(m.st.items)-1 {
			m.selected++
		}
	case "q":
		if m.cfg.Watch {
			return m, tea.Quit
		}
		if m.stopping == "" {
			m.stopping = "graceful"
			return m, m.stop(false)
		}
	case "Q", "ctrl+c":
		if m.cfg.Watch && k.String() == "ctrl+c" {
			return m, tea.Quit
		}
		if m.cfg.Watch && m.finished() {
			m.flash = "the run is over: nothing to stop"
			return m, nil
		}
		if m.stopping != "now" {
			m.stopping = "now"
			return m, m.stop(true)
		}
	case "enter":
		it := m.current()
		if it == nil || it.Step == "" {
			m.flash = "no step to follow yet"
			return m, nil
		}
		m.mode, m.logItem, m.logStep = modeLog, it.ID, it.Step
		m.log.SetContent("")
		return m, m.readLog(it.ID, it.Step)
	case "a":
		it := m.current()
		if it == nil || it.Status != "paused" {
			if p := m.st.paused(); len(p) > 0 {
				it = p[0]
			} else {
				m.flash = "no item is paused"
				return m, nil
			}
		}
		m.form = formState{item: it.ID, note: textinput.New()}
		// A steady cursor: a blinking one re-renders twice a second for
		// nothing while the run's own updates already redraw the view.
		sty := m.form.note.Styles()
		sty.Cursor.Blink = false
		m.form.note.SetStyles(sty)
		m.form.note.Placeholder = "note for the next agent (optional)"
		m.form.note.SetWidth(max(m.width-12, 20))
		m.mode = modeApprove
		return m, m.form.note.Focus()
	}
	return m, nil
}

func (m Model) updateLog(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "esc", "q":
		m.mode = modeList
		return m, nil
	case "ctrl+c":
		m.mode = modeList
		return m.updateList(k)
	}
	var cmd tea.Cmd
	m.log, cmd = m.log.Update(k)
	return m, cmd
}

func (m Model) updateForm(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "esc":
		m.mode = modeList
		return m, nil
	case "tab", "shift+tab", "up", "down":
		m.form.reject = !m.form.reject
		return m, nil
	case "enter":
		m.mode = modeList
		item, approved, note := m.form.item, !m.form.reject, m.form.note.Value()
		act := m.cfg.Actions
		return m, func() tea.Msg {
			if act == nil {
				return actionMsg{err: fmt.Errorf("approve %s: this view cannot act on the run", item)}
			}
			if err := act.Approve(item, approved, note); err != nil {
				return actionMsg{err: err}
			}
			verb := "approved"
			if !approved {
				verb = "rejected"
			}
			return actionMsg{text: fmt.Sprintf("%s %s; cadre resume continues it", verb, item)}
		}
	}
	var cmd tea.Cmd
	m.form.note, cmd = m.form.note.Update(k)
	return m, cmd
}

// current is the selected item, or nil before any row exists.
func (m Model) current() *Item {
	if len(m.st.items) == 0 {
		return nil
	}
	return m.st.items[min(m.selected, len(m.st.items)-1)]
}

func (m Model) stop(now bool) tea.Cmd {
	act := m.cfg.Actions
	return func() tea.Msg {
		if act == nil {
			return actionMsg{err: fmt.Errorf("stop: this view cannot act on the run")}
		}
		if err := act.Stop(now); err != nil {
			return actionMsg{err: err}
		}
		if now {
			return actionMsg{text: "stopping now: running steps are cancelled"}
		}
		return actionMsg{text: "stopping: running steps finish, no new step starts (Q: stop now)"}
	}
}

func (m Model) readLog(item, step string) tea.Cmd {
	act := m.cfg.Actions
	return func() tea.Msg {
		if act == nil {
			return logMsg{item: item, step: step, err: fmt.Errorf("no log reader")}
		}
		text, err := act.Log(item, step)
		return logMsg{item: item, step: step, text: text, err: err}
	}
}
