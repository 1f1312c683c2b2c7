package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/cadre-dev/cadre/internal/runlock"
	"github.com/cadre-dev/cadre/internal/store"
)

// Options are what a benchmark was started with, journaled as its run's
// options. Roles, Runners, Repeat and Judge identify it: running cadre
// bench again with the same four continues it (another judge would score
// the rest on another scale).
type Options struct {
	Roles   []string `json:"roles"` // empty: every role with a case
	Runners []string `json:"runners"`
	Repeat  int      `json:"repeat"`
	Judge   string   `json:"judge"`
}

// same reports whether o and p name the same benchmark. Order does not
// matter: --runners a,b and b,a run the same jobs.
func (o Options) same(p Options) bool {
	norm := func(s []string) []string {
		c := slices.Clone(s)
		slices.Sort(c)
		return slices.Compact(c)
	}
	return o.Repeat == p.Repeat && o.Judge == p.Judge && slices.Equal(norm(o.Roles), norm(p.Roles)) && slices.Equal(norm(o.Runners), norm(p.Runners))
}

// Run is a journaled benchmark.
type Run struct {
	ID      string
	Resumed bool // an unfinished benchmark with the same options was found
	Options Options
}

// ErrBusy is wrapped when the benchmark to resume is running in another
// live process.
var ErrBusy = fmt.Errorf("benchmark is running")

// Open returns the benchmark to run: the latest unfinished one started
// with the same options, unless fresh, else a new one journaled now.
func Open(ctx context.Context, st *store.Store, repo string, opts Options, fresh bool) (Run, error) {
	if !fresh {
		runs, err := st.RunsOf(ctx, store.WorkflowBench)
		if err != nil {
			return Run{}, err
		}
		for _, r := range runs {
			var o Options
			if r.Status == store.RunCompleted || json.Unmarshal(r.Options, &o) != nil || !o.same(opts) {
				continue
			}
			if r.Status == store.RunRunning && r.PID != os.Getpid() && runlock.Alive(r.PID) {
				return Run{}, fmt.Errorf("%w: bench %s (pid %d); wait for it or start another with --new", ErrBusy, r.ID, r.PID)
			}
			if err := st.SetRunStatus(ctx, r.ID, store.RunRunning, os.Getpid()); err != nil {
				return Run{}, err
			}
			return Run{ID: r.ID, Resumed: true, Options: opts}, nil
		}
	}
	raw, err := json.Marshal(opts)
	if err != nil {
		return Run{}, fmt.Errorf("bench options: %w", err)
	}
	id := "bench-" + time.Now().UTC().Format("20060102-150405") + "-" + uuid.NewString()[:8]
	if err := st.CreateRun(ctx, store.Run{ID: id, Repo: repo, Workflow: store.WorkflowBench, Options: raw, PID: os.Getpid()}); err != nil {
		return Run{}, err
	}
	return Run{ID: id, Options: opts}, nil
}

// Job is one case run by one runner once.
type Job struct {
	Case   Case
	Runner string
	Rep    int // 1-based
}

// StepID is the job's journal step and score-store step id:
// "<role>/<case>/<runner>#<rep>".
func (j Job) StepID() string {
	return fmt.Sprintf("%s/%s/%s#%d", j.Case.Role, j.Case.Name, j.Runner, j.Rep)
}

// Jobs lists the jobs of cases × runners × repeat, case by case.
func Jobs(cases []Case, runners []string, repeat int) []Job {
	var out []Job
	for _, c := range cases {
		for _, r := range runners {
			for rep := 1; rep <= repeat; rep++ {
				out = append(out, Job{Case: c, Runner: r, Rep: rep})
			}
		}
	}
	return out
}

// pending returns the jobs the journal does not record as completed, and
// how many are done.
func pending(ctx context.Context, st *store.Store, runID string, jobs []Job) ([]Job, int, error) {
	steps, err := st.Steps(ctx, runID)
	if err != nil {
		return nil, 0, err
	}
	done := map[string]bool{}
	for _, s := range steps {
		done[s.ID] = s.Status == store.StepCompleted
	}
	var out []Job
	for _, j := range jobs {
		if !done[j.StepID()] {
			out = append(out, j)
		}
	}
	return out, len(jobs) - len(out), nil
}
