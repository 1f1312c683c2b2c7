package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/promptlog"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// maxFile bounds a step file served to the page; agents' logs can be huge.
const maxFile = 1 << 20

type runJSON struct {
	ID       string     `json:"id"`
	Repo     string     `json:"repo"`
	Workflow string     `json:"workflow"`
	Status   string     `json:"status"`
	Started  time.Time  `json:"started"`
	Updated  time.Time  `json:"updated"`
	Ended    *time.Time `json:"ended,omitempty"`
}

type cardJSON struct {
	ID          string      `json:"id"`
	Title       string      `json:"title"`
	Stage       string      `json:"stage"`
	Status      string      `json:"status"`
	Column      string      `json:"column"`
	Reason      string      `json:"reason,omitempty"`
	CurrentStep string      `json:"current_step,omitempty"`
	Role        string      `json:"role,omitempty"`
	Runner      string      `json:"runner,omitempty"`
	Model       string      `json:"model,omitempty"`
	Attempts    int         `json:"attempts"`
	Steps       int         `json:"steps"`
	Usage       event.Usage `json:"usage"`
	Branch      string      `json:"branch,omitempty"`
	PR          string      `json:"pr,omitempty"`
	PRNumber    int         `json:"pr_number,omitempty"`
	// Issue is the tracker's key of the issue the item came from
	// (PROJ-123), beside its pull request; IssueURL its page.
	Issue    string `json:"issue,omitempty"`
	IssueURL string `json:"issue_url,omitempty"`
	Waiting  bool   `json:"waiting"` // a question for a human is open
	// Where the pull request stands, when the board can ask GitHub:
	// pr_state, checks, review, mergeable.
	*codehost.PRStatus
}

type boardJSON struct {
	Run     runJSON     `json:"run"`
	Seq     int64       `json:"seq"` // follow the events after this one
	Columns []Column    `json:"columns"`
	Items   []cardJSON  `json:"items"`
	Usage   event.Usage `json:"usage"`
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(v)
}

// fail answers err: 404 for what the journal does not have, 500 else.
func fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, store.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ErrConflict):
		code = http.StatusConflict
	}
	http.Error(w, err.Error(), code)
}

func toRunJSON(r store.Run) runJSON {
	return runJSON{ID: r.ID, Repo: r.Repo, Workflow: r.Workflow, Status: r.Status, Started: r.StartedAt, Updated: r.UpdatedAt, Ended: r.EndedAt}
}

type repoJSON struct {
	Key     string `json:"key"`
	Name    string `json:"name"`
	Dir     string `json:"dir,omitempty"`
	Runs    int    `json:"runs"`
	Running int    `json:"running"`
}

// listRepos lists the board's repositories, with how many runs each has
// and how many of them run now, so the picker shows where work goes on.
func (s *Server) listRepos(w http.ResponseWriter, r *http.Request) {
	out := []repoJSON{}
	for _, rp := range s.repos {
		runs, err := rp.Store.Runs(r.Context())
		if err != nil {
			fail(w, fmt.Errorf("list the runs of %s: %w", rp.Name, err))
			return
		}
		rj := repoJSON{Key: rp.key, Name: rp.Name, Dir: rp.Dir, Runs: len(runs)}
		for _, run := range runs {
			if run.Status == store.RunRunning {
				rj.Running++
			}
		}
		out = append(out, rj)
	}
	writeJSON(w, out)
}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request, rp *repo) {
	runs, err := rp.Store.Runs(r.Context())
	if err != nil {
		fail(w, err)
		return
	}
	out := []runJSON{}
	for _, run := range runs {
		out = append(out, toRunJSON(run))
	}
	writeJSON(w, out)
}

func (s *Server) board(w http.ResponseWriter, r *http.Request, rp *repo) {
	ctx := r.Context()
	id := r.PathValue("run")
	// The sequence number is read first: events journaled while the
	// snapshot is built are sent again, and applying one twice is harmless.
	seq, err := rp.Store.LastEventSeq(ctx)
	if err != nil {
		fail(w, err)
		return
	}
	run, steps, sum, err := readRun(ctx, rp.Store, id)
	if err != nil {
		fail(w, err)
		return
	}
	running := map[string]store.Step{} // an item's latest started agent step
	waiting := map[string]bool{}
	for _, st := range steps {
		if st.Status != store.StepStarted {
			continue
		}
		switch st.Kind {
		case "agent":
			running[st.ItemID] = st
		case "human":
			waiting[st.ItemID] = true
		}
	}
	b := boardJSON{Run: toRunJSON(run), Seq: seq, Columns: Columns, Items: []cardJSON{}, Usage: sum.Usage}
	for _, it := range sum.Items {
		c := cardJSON{ID: it.ID, Title: it.Title, Stage: it.Stage, Status: it.Status, Reason: it.Reason, CurrentStep: it.CurrentStep,
			Attempts: it.Attempts, Steps: it.Steps, Usage: it.Usage, Branch: it.Branch, PR: it.PR, PRNumber: it.PRNumber, Waiting: waiting[it.ID]}
		if it.PRNumber > 0 {
			c.PRStatus = rp.prStatus(ctx, it.PRNumber)
		}
		if rec, err := rp.Store.GetItem(ctx, run.ID, it.ID); err == nil {
			if is, ok := intake.IssueOf(rec); ok && is.Key != "" {
				c.Issue, c.IssueURL = is.Key, is.URL
			}
		}
		if st, ok := running[it.ID]; ok && it.Status == store.ItemRunning {
			c.Role, c.Runner, c.Model = st.Role, st.Runner, st.Model
		}
		c.Column = itemColumn(it.Status, it.Stage, c.Role)
		b.Items = append(b.Items, c)
	}
	writeJSON(w, b)
}

type stepJSON struct {
	ID       string          `json:"id"`
	Role     string          `json:"role,omitempty"`
	Runner   string          `json:"runner,omitempty"`
	Model    string          `json:"model,omitempty"`
	Kind     string          `json:"kind"`
	Status   string          `json:"status"`
	Tries    int             `json:"tries"`
	ExitCode int             `json:"exit_code"`
	Signal   json.RawMessage `json:"signal,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Usage    event.Usage     `json:"usage"`
	Error    string          `json:"error,omitempty"`
	Started  time.Time       `json:"started"`
	Ended    *time.Time      `json:"ended,omitempty"`
	Files    []string        `json:"files"` // of prompt, context, output, log: those on disk
}

func (s *Server) item(w http.ResponseWriter, r *http.Request, rp *repo) {
	ctx := r.Context()
	run, id := r.PathValue("run"), r.PathValue("item")
	_, steps, sum, err := readRun(ctx, rp.Store, run)
	if err != nil {
		fail(w, err)
		return
	}
	var card *report.ItemSummary
	for i := range sum.Items {
		if sum.Items[i].ID == id {
			card = &sum.Items[i]
		}
	}
	if card == nil {
		fail(w, fmt.Errorf("item %s of run %s: %w", id, run, store.ErrNotFound))
		return
	}
	out := struct {
		Item    report.ItemSummary    `json:"item"`
		Steps   []stepJSON            `json:"steps"`
		Diff    string                `json:"diff,omitempty"`
		Commits []workspace.LogCommit `json:"commits,omitempty"`
	}{Item: *card, Steps: []stepJSON{}}
	if rp.Changes != nil && card.Branch != "" {
		// The branch may be gone (merged, pruned): the page goes without.
		if diff, commits, err := rp.Changes.Changes(ctx, card.Branch); err == nil {
			out.Diff, out.Commits = rp.Redact(diff), commits
		}
	}
	var prompts map[string]string
	for _, st := range steps {
		if st.ItemID != id {
			continue
		}
		sj := stepJSON{ID: st.ID, Role: st.Role, Runner: st.Runner, Model: st.Model, Kind: st.Kind, Status: st.Status,
			Tries: st.Tries, ExitCode: st.ExitCode, Signal: st.Signal, Result: st.Result, Error: rp.Redact(st.Error),
			Usage: event.Usage{InputTokens: st.Usage.InputTokens, OutputTokens: st.Usage.OutputTokens,
				CacheReadTokens: st.Usage.CacheReadTokens, CacheWriteTokens: st.Usage.CacheWriteTokens,
				CostUSD: st.Usage.CostUSD, CostEstimated: st.Usage.CostEstimated},
			Started: st.StartedAt, Ended: st.EndedAt, Files: []string{}}
		for _, kind := range fileKinds {
			if kind == "prompt" {
				if prompts == nil && st.OutputPath != "" {
					// One read per item: every step's prompt is in one file.
					if prompts, err = promptlog.Read(stepDir(st.OutputPath)); err != nil {
						prompts = map[string]string{}
					}
				}
				if _, ok := prompts[stepStem(st.OutputPath)]; ok {
					sj.Files = append(sj.Files, kind)
				}
				continue
			}
			// Listed only as file serves it: a plain file, not a link.
			if fi, err := os.Lstat(stepFile(st.OutputPath, kind)); err == nil && fi.Mode().IsRegular() {
				sj.Files = append(sj.Files, kind)
			}
		}
		out.Steps = append(out.Steps, sj)
	}
	writeJSON(w, out)
}

// fileKinds are the step files the item page shows, in order. Every agent
// step's prompt is kept in the item's prompts file; a step without one (a
// run by an older cadre) shows its context file as what it was given.
var fileKinds = []string{"prompt", "context", "output", "log"}

// stepFile derives a step's file of kind from its journaled output path
// (.cadre/runs/RUN/items/ITEM/outputs/STEM.md, beside contexts/STEM.json
// and logs/STEM.log; docs/workflows.md#context-files). The path comes from
// the journal, never from the request.
// The prompt is not a file of its own: it is read from the item's prompts
// file (promptlog.Read).
func stepFile(outPath, kind string) string {
	if outPath == "" {
		return ""
	}
	dir, stem := stepDir(outPath), stepStem(outPath)
	switch kind {
	case "output":
		return outPath
	case "context":
		return filepath.Join(dir, "contexts", stem+".json")
	case "log":
		return filepath.Join(dir, "logs", stem+".log")
	}
	return ""
}

// stepDir is the item's run directory of a step, from its output path.
func stepDir(outPath string) string { return filepath.Dir(filepath.Dir(outPath)) }

// stepStem is the name a step's files share, from its output path.
func stepStem(outPath string) string { return strings.TrimSuffix(filepath.Base(outPath), ".md") }

func (s *Server) file(w http.ResponseWriter, r *http.Request, rp *repo) {
	run, step, kind := r.PathValue("run"), r.URL.Query().Get("step"), r.URL.Query().Get("kind")
	if !slices.Contains(fileKinds, kind) {
		http.Error(w, "kind must be prompt, context, output or log", http.StatusBadRequest)
		return
	}
	st, err := rp.Store.GetStep(r.Context(), run, step)
	if err != nil {
		fail(w, err)
		return
	}
	var data []byte
	switch {
	case st.OutputPath == "":
		// A step that is no agent's (a commit, a worktree) has no files.
		err = os.ErrNotExist
	case kind == "prompt":
		var prompts map[string]string
		if prompts, err = promptlog.Read(stepDir(st.OutputPath)); err == nil {
			text, ok := prompts[stepStem(st.OutputPath)]
			if !ok {
				err = os.ErrNotExist
			}
			data = []byte(text)
		}
	default:
		// Read under the item's step directory without following links: an
		// agent that made its output a link to a file elsewhere gets nothing
		// served.
		data, err = safefile.ReadFile(stepDir(st.OutputPath), stepFile(st.OutputPath, kind))
	}
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, safefile.ErrUnsafe):
		http.Error(w, fmt.Sprintf("no %s file for step %s", kind, step), http.StatusNotFound)
		return
	case err != nil:
		fail(w, fmt.Errorf("read %s of step %s: %w", kind, step, err))
		return
	}
	text := string(data)
	if len(data) > maxFile {
		text = string(data[:maxFile]) + "\n… (cut at 1 MiB)"
	}
	// text/plain with nosniff: even opened on its own, an agent's output
	// is never rendered as HTML.
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, rp.Redact(text))
}

func (s *Server) cost(w http.ResponseWriter, r *http.Request, rp *repo) {
	ctx := r.Context()
	run := r.PathValue("run")
	if _, err := rp.Store.GetRun(ctx, run); err != nil {
		fail(w, err)
		return
	}
	steps, err := rp.Store.Steps(ctx, run)
	if err != nil {
		fail(w, err)
		return
	}
	out := map[string][]report.Row{}
	for _, by := range []string{"role", "runner", "model"} {
		rows, err := report.RowsOf(ctx, rp.Store, run, by, steps)
		if err != nil {
			fail(w, err)
			return
		}
		if rows == nil {
			rows = []report.Row{}
		}
		out[by] = rows
	}
	writeJSON(w, out)
}

// readRun reads a run, its items and its steps once, and summarises them.
func readRun(ctx context.Context, st *store.Store, id string) (store.Run, []store.Step, report.Summary, error) {
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return store.Run{}, nil, report.Summary{}, err
	}
	items, err := st.Items(ctx, id)
	if err != nil {
		return store.Run{}, nil, report.Summary{}, err
	}
	steps, err := st.Steps(ctx, id)
	if err != nil {
		return store.Run{}, nil, report.Summary{}, err
	}
	return run, steps, report.SummarizeRows(run, items, steps), nil
}
