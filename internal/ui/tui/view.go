package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/cadre-dev/cadre/internal/event"
)

var (
	styleHead     = lipgloss.NewStyle().Bold(true)
	styleSelected = lipgloss.NewStyle().Reverse(true)
	styleDim      = lipgloss.NewStyle().Faint(true)
	styleWarn     = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
	styleStatus   = map[string]lipgloss.Style{
		"completed": lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
		"failed":    lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
		"paused":    lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
	}
)

// barWidth is the cells of a progress bar.
const barWidth = 10

// columns of a row: header and width.
var columns = []struct {
	name  string
	width int
}{
	{"ITEM", 12}, {"TITLE", 20}, {"WORKFLOW", 8}, {"STATUS", 9}, {"PHASE", 8}, {"ROLE → RUNNER/MODEL", 24},
	{"ATT", 3}, {"ELAPSED", 7}, {"TOKENS", 10}, {"COST", 8}, {"PROGRESS", barWidth + 6},
}

// View renders the model.
func (m Model) View() tea.View {
	var body string
	switch m.mode {
	case modeLog:
		body = m.viewLog()
	default:
		body = m.viewList()
	}
	v := tea.NewView(body)
	// The alternate screen leaves the user's scrollback as it was: the
	// summary printed after the view is what stays.
	v.AltScreen = true
	return v
}

// Render is the view's text, for tests and for the log of a run.
func (m Model) Render() string { return m.View().Content }

func (m Model) viewList() string {
	var b strings.Builder
	title := "cadre run " + m.st.run
	if m.cfg.Watch {
		title = "cadre status --watch " + m.st.run
	}
	status := m.st.status
	if status == "" {
		status = "starting"
	}
	b.WriteString(m.fit(styleHead.Render(title)+"  "+status) + "\n\n")
	var head []string
	for _, c := range columns {
		head = append(head, pad(c.name, c.width))
	}
	b.WriteString(m.fit(styleDim.Render(strings.Join(head, " "))) + "\n")
	if len(m.st.items) == 0 {
		b.WriteString(styleDim.Render("(no items yet)") + "\n")
	}
	for i, it := range m.st.items {
		line := m.fit(m.row(it))
		if i == m.selected {
			line = styleSelected.Render(line)
		} else if s, ok := styleStatus[it.Status]; ok {
			line = s.Render(line)
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("\n" + m.footer())
	return b.String()
}

// row renders one item's cells.
func (m Model) row(it *Item) string {
	who := it.Role
	if it.Runner != "" {
		who += " → " + it.Runner
		if it.Model != "" {
			who += "/" + it.Model
		}
	}
	phase := it.Phase
	if phase == "" {
		phase = it.Stage
	}
	cells := []string{it.ID, it.Title, it.Workflow, it.Status, phase, who,
		attempt(it), m.elapsed(it), tokens(it.Usage), cost(it.Usage), bar(it)}
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = pad(c, columns[i].width)
	}
	return strings.Join(out, " ")
}

func (m Model) elapsed(it *Item) string {
	if it.Started.IsZero() {
		return "-"
	}
	end := m.now
	switch {
	case !it.Ended.IsZero():
		end = it.Ended
	case it.Status != "running" && it.Status != "pending" && !it.last.IsZero():
		end = it.last // paused or stopped: the clock stands still
	}
	return end.Sub(it.Started).Truncate(time.Second).String()
}

// bar renders the item's progress over its workflow's steps.
func bar(it *Item) string {
	filled := int(it.Ratio()*barWidth + 0.5)
	done, total := it.Done(), it.Total()
	if it.Status == "completed" {
		done = max(done, total)
		total = done
	}
	return strings.Repeat("█", filled) + strings.Repeat("░", barWidth-filled) + fmt.Sprintf(" %d/%d", done, total)
}

func (m Model) footer() string {
	var b strings.Builder
	u := m.st.usage
	c := m.st.counts()
	line := fmt.Sprintf("total: %d items (%d running, %d completed, %d failed, %d paused)  tokens %s  cost %s",
		len(m.st.items), c["running"], c["completed"], c["failed"], c["paused"], tokens(u), cost(u))
	if m.cfg.Budget > 0 {
		line += fmt.Sprintf("  budget left $%.4f of $%.2f", m.cfg.Budget-u.CostUSD, m.cfg.Budget)
	}
	b.WriteString(m.fit(line) + "\n")
	for _, it := range m.st.paused() {
		b.WriteString(m.fit(styleWarn.Render("paused: "+it.ID+": "+it.Reason)) + "\n")
	}
	if m.st.notice != "" {
		b.WriteString(m.fit(styleWarn.Render(m.st.notice)) + "\n")
	}
	for _, it := range m.st.items {
		if it.PR != "" {
			b.WriteString(m.fit("pull request of "+it.ID+": "+it.PR) + "\n")
		}
	}
	switch m.stopping {
	case "graceful":
		b.WriteString(m.fit(styleWarn.Render("stopping: running steps finish, no new step starts")) + "\n")
	case "now":
		b.WriteString(m.fit(styleWarn.Render("stopping now: running steps are cancelled")) + "\n")
	}
	if m.flash != "" {
		b.WriteString(m.fit(m.flash) + "\n")
	}
	if m.mode == modeApprove {
		b.WriteString(m.viewForm())
	}
	keys := "↑/↓ select  enter follow log  a approve/reject  q stop  Q stop now"
	if m.cfg.Watch {
		keys = "↑/↓ select  enter follow log  a approve/reject  Q stop the run now  q quit"
	}
	if m.finished() && m.cfg.Watch {
		// Nothing is left to stop; an item still waiting can be answered.
		keys = "↑/↓ select  enter follow log"
		if len(m.st.paused()) > 0 {
			keys += "  a approve/reject"
		}
		keys += "  q quit"
	}
	if m.done && m.cfg.Watch {
		keys = "the run is over  " + keys
	}
	b.WriteString(m.fit(styleDim.Render(keys)))
	return b.String()
}

func (m Model) viewForm() string {
	choice := "[x] approve  [ ] reject"
	if m.form.reject {
		choice = "[ ] approve  [x] reject"
	}
	return fmt.Sprintf("\n%s %s  %s  (tab: toggle, enter: send, esc: cancel)\nnote: %s\n\n",
		styleHead.Render("answer"), m.form.item, choice, m.form.note.View())
}

func (m Model) viewLog() string {
	head := styleHead.Render(fmt.Sprintf("log of %s  %s", m.logItem, m.logStep))
	return m.fit(head) + "\n" + m.log.View() + "\n" + styleDim.Render("↑/↓ pgup/pgdn scroll  esc back")
}

// fit cuts a line to the terminal's width (once the terminal told it).
func (m Model) fit(s string) string {
	if m.width <= 0 {
		return s
	}
	return ansi.Truncate(s, m.width, "…")
}

// pad cuts or pads s to exactly w cells.
func pad(s string, w int) string {
	s = ansi.Truncate(s, w, "…")
	if n := ansi.StringWidth(s); n < w {
		s += strings.Repeat(" ", w-n)
	}
	return s
}

// tokens shows input/output tokens, abbreviated.
func tokens(u event.Usage) string {
	return short(u.InputTokens) + "/" + short(u.OutputTokens)
}

func short(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%dk", n/1000)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func cost(u event.Usage) string {
	s := fmt.Sprintf("$%.4f", u.CostUSD)
	if u.CostEstimated {
		s = "~" + s
	}
	return s
}

// finished says the watched run ended for good (completed or failed): a
// run that paused or stopped, or one on Temporal, may still be stopped or
// answered.
func (m Model) finished() bool {
	return m.done && (m.st.status == "completed" || m.st.status == "failed")
}

// attempt is the attempt an item is on (or ended on): its first while no
// attempt failed, as the journal counts the failed ones; "-" before it
// starts.
func attempt(it *Item) string {
	if it.Status == "" || it.Status == "pending" {
		return "-"
	}
	return fmt.Sprint(it.Attempts + 1)
}
