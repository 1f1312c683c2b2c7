package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/eventlog"
	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/promptlog"
	"github.com/cadre-dev/cadre/internal/replica"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// replicaEnv is a worker on another machine: a clone of truth's
// repository with its own journal, its agents the same fake runner.
func replicaEnv(t *testing.T, truth *env) *env {
	t.Helper()
	root := filepath.Join(t.TempDir(), "replica")
	otherMachine(t, truth.root, root)
	st, err := store.Open(context.Background(), filepath.Join(root, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{t: t, root: root, st: st, fake: truth.fake}
	var mu sync.Mutex
	bus := event.NewBus(nil, event.SinkFunc(func(ev event.Event) { mu.Lock(); e.events = append(e.events, ev); mu.Unlock() }))
	e.eng, err = New(context.Background(), fakeDeps(t, root, st, truth.fake, bus))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// otherMachine clones src into dst as the repository of a worker on
// another machine: its own committer, its .cadre excluded.
func otherMachine(t *testing.T, src, dst string) {
	t.Helper()
	git(t, filepath.Dir(dst), "clone", "-q", src, dst)
	git(t, dst, "config", "user.email", "w@example.com")
	git(t, dst, "config", "user.name", "W")
	os.WriteFile(filepath.Join(dst, ".git", "info", "exclude"), []byte("/.cadre/\n"), 0o644)
}

// fakeDeps are the dependencies of an engine at root whose every agent is
// fake.
func fakeDeps(t *testing.T, root string, st *store.Store, fake *fakeRunner, bus *event.Bus) Deps {
	t.Helper()
	cfg := config.Default()
	cfg.Defaults.Runner = "fake"
	reg := runner.NewRegistry()
	reg.Register("fake", func(runner.Settings) (runner.Runner, error) { return fake, nil })
	roles, err := role.Load("")
	if err != nil {
		t.Fatal(err)
	}
	return Deps{Root: root, Config: cfg, Store: st, Roles: roles, Runners: reg, Bus: bus}
}

// journaled has e's events written to its journal, as cadre run does;
// the returned function flushes them.
func journaled(e *env) func() {
	j := eventlog.NewSink(e.st)
	e.eng.d.Bus.Subscribe(j)
	return func() {
		if err := j.Close(); err != nil {
			e.t.Error(err)
		}
	}
}

// replicated performs an item's steps as Temporal workers on two other
// machines would: each step on the other replica than the one before,
// hydrated from the truth when stale, its batch sent back through JSON
// (a Temporal payload) and applied to the truth, then applied again as a
// retried activity would.
type replicated struct {
	t     *testing.T
	truth *env
	reps  [2]*env

	mu    sync.Mutex
	n     int
	open  [2]map[string]*ItemSteps
	sizes []int // each batch's size in JSON
	hydr  int   // hydrations
}

func (r *replicated) step(ctx context.Context, run, item string, fn func(*ItemSteps) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	i := r.n % 2
	rep := r.reps[i]
	if r.open[i] == nil {
		r.open[i] = map[string]*ItemSteps{}
	}
	want, err := r.truth.st.AppliedSeq(ctx, run, item)
	if err != nil {
		return err
	}
	if have, err := rep.eng.Replica().Seq(ctx, run, item); err != nil || have != want {
		if s := r.open[i][item]; s != nil {
			s.Close()
			delete(r.open[i], item)
		}
		snap, err := r.truth.eng.Replica().Export(ctx, run, item)
		if err != nil {
			return err
		}
		var got replica.Snapshot
		roundTrip(r.t, snap, &got)
		if err := rep.eng.Replica().Hydrate(ctx, got); err != nil {
			return err
		}
		r.hydr++
	}
	s := r.open[i][item]
	if s == nil {
		rs, err := rep.eng.OpenRun(ctx, run)
		if err != nil {
			return err
		}
		if s, err = rs.OpenItem(ctx, item); err != nil {
			return err
		}
		r.open[i][item] = s
	}
	ferr := fn(s)
	b, err := s.TakeBatch(ctx)
	if err != nil {
		return err
	}
	var got replica.Batch
	r.sizes = append(r.sizes, roundTrip(r.t, b, &got))
	if ok, err := r.truth.eng.Replica().Apply(ctx, got); err != nil || !ok {
		r.t.Fatalf("apply %s: %v, %v: want applied", b.BatchKey, ok, err)
	}
	if ok, err := r.truth.eng.Replica().Apply(ctx, got); err != nil || ok {
		r.t.Fatalf("apply %s again: %v, %v: want nothing done", b.BatchKey, ok, err)
	}
	return ferr
}

func roundTrip(t *testing.T, v, out any) int {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	return len(data)
}

// drive is the stage pipeline as the Temporal item workflow runs it
// (twoWorkers.drive), each call through step.
func (r *replicated) drive(ctx context.Context, run string, it store.Item) error {
	var b executor.Begun
	if err := r.step(ctx, run, it.ID, func(s *ItemSteps) (err error) { b, err = s.Begin(ctx); return err }); err != nil || b.Status != "" {
		return err
	}
	lim := workflow.Limits{AuditPassRating: b.Limits.AuditPassRating, MaxAttempts: b.Limits.MaxAttempts, EscalateBelowConfidence: b.Limits.EscalateBelowConfidence}
	s, d := workflow.Next(lim, workflow.Initial(it.ID, b.Stage, b.Attempts), workflow.Event{Kind: workflow.Start})
	for d.Kind == workflow.RunStep {
		var got executor.Staged
		if err := r.step(ctx, run, it.ID, func(st *ItemSteps) (err error) { got, err = st.Stage(ctx, s, d); return err }); err != nil {
			return err
		}
		s, d = workflow.Next(lim, s, got.Event)
	}
	return r.step(ctx, run, it.ID, func(st *ItemSteps) error {
		_, err := st.End(ctx, executor.Ending{Pipeline: &executor.PipelineEnding{State: s, Decision: d}})
		return err
	})
}

func (r *replicated) close() {
	for _, m := range r.open {
		for _, s := range m {
			s.Close()
		}
	}
}

// view is what cadre status, report and the board read of a run's
// journal, with what differs between two runs of the same steps (ids,
// times, roots, commit hashes) taken out.
type view struct {
	Items  []string
	Steps  []string
	Totals store.Usage
	Events map[string][]string // per item: type role step
}

var shaRE = regexp.MustCompile(`[0-9a-f]{40}`)

// tokenRE is the token in an agent step's output file name, which differs
// from run to run.
var tokenRE = regexp.MustCompile(`\.[0-9a-f]{32}\.md\b`)

func journalView(t *testing.T, e *env, run string) view {
	t.Helper()
	ctx := context.Background()
	clean := func(s string) string {
		s = tokenRE.ReplaceAllString(s, ".TOKEN.md")
		return shaRE.ReplaceAllString(strings.ReplaceAll(strings.ReplaceAll(s, e.root, "ROOT"), run, "RUN"), "SHA")
	}
	var v view
	items, err := e.st.Items(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		v.Items = append(v.Items, clean(strings.Join([]string{it.ID, it.Status, it.Stage, it.Error, it.CurrentStep, it.Ref}, " | ")))
	}
	steps, err := e.st.Steps(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	// Items running at once interleave their steps; each item's order is
	// its own.
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].ItemID < steps[j].ItemID })
	for _, st := range steps {
		u, _ := json.Marshal(st.Usage)
		v.Steps = append(v.Steps, clean(strings.Join([]string{st.ItemID, st.ID, st.Role, st.Kind, st.Status, strconv.Itoa(st.Tries),
			st.OutputPath, string(st.Signal), string(st.Result), string(u), st.Error}, " | ")))
	}
	if v.Totals, err = e.st.Totals(ctx, run); err != nil {
		t.Fatal(err)
	}
	evs, _, err := e.st.Events(ctx, run, 0)
	if err != nil {
		t.Fatal(err)
	}
	v.Events = map[string][]string{}
	for _, ev := range evs {
		var d event.Event
		json.Unmarshal(ev.Data, &d)
		if ev.ItemID != "" {
			v.Events[ev.ItemID] = append(v.Events[ev.ItemID], clean(ev.Type+" "+d.Role+" "+d.Step+" "+d.Message+" "+d.Error))
		}
	}
	return v
}

// An item whose steps run on two replicas, each hydrated from the truth
// when the other ran a step since, leaves the truth's journal as running
// the same steps on the truth itself does: items, steps (tries, usage,
// signals, outputs), totals, events; its output files and task file are
// the truth's; each batch applied a second time changed nothing.
func TestReplicatedStepsJournalAsOnTheTruth(t *testing.T) {
	do := func(inv runner.Invocation) runner.Result {
		if inv.Role == "auditor" && inv.Item == "b" && inv.Attempt == 1 {
			return runner.Result{Output: signalText("auditor", "INSUFFICIENT", 3), Usage: event.Usage{InputTokens: 5, CostUSD: 0.002}}
		}
		return passAll(inv)
	}
	tasks := [][2]string{{"a", "code"}, {"b", "code"}}
	ctx := context.Background()

	direct := newEnv(t, do, tasks...)
	flushD := journaled(direct)
	w := &twoWorkers{e: direct.eng}
	dsum, err := direct.eng.StartWith(ctx, Options{}, w.drive(t))
	flushD()
	if err != nil || dsum.Status != store.RunCompleted {
		t.Fatalf("direct run: %v %+v", err, dsum)
	}

	truth := newEnv(t, do, tasks...)
	flushT := journaled(truth)
	r := &replicated{t: t, truth: truth}
	r.reps = [2]*env{replicaEnv(t, truth), replicaEnv(t, truth)}
	// One item after the other: the replicas alternate within each.
	var serial sync.Mutex
	sum, err := truth.eng.StartWith(ctx, Options{}, func(ctx context.Context, run string, it store.Item) error {
		serial.Lock()
		defer serial.Unlock()
		return r.drive(ctx, run, it)
	})
	r.close()
	flushT()
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("replicated run: %v %+v", err, sum)
	}
	if r.hydr < 4 {
		t.Errorf("%d hydrations: the replicas did not take turns", r.hydr)
	}
	want, got := journalView(t, direct, dsum.Run), journalView(t, truth, sum.Run)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the truth's journal differs from a run on it directly (-direct +replicated):\n%s", diff)
	}
	if got.Totals.CostUSD == 0 || len(got.Events["b"]) == 0 {
		t.Errorf("nothing journaled: %+v", got)
	}
	// The files the board and later steps read are the truth's.
	for _, f := range []string{"outputs/code-coder-1.*.md", "outputs/audit-auditor-2.*.md", "current_cycle.md", promptlog.File} {
		a, err1 := readGlob(filepath.Join(itemDir(direct.root, dsum.Run, "b"), f))
		b, err2 := readGlob(filepath.Join(itemDir(truth.root, sum.Run, "b"), f))
		if err1 != nil || err2 != nil {
			t.Errorf("%s: %v, %v", f, err1, err2)
			continue
		}
		norm := func(d []byte, root, run string) string {
			s := strings.ReplaceAll(strings.ReplaceAll(string(d), root, "ROOT"), run, "RUN")
			s = tokenRE.ReplaceAllString(s, ".TOKEN.md")
			return regexp.MustCompile(`(?m)^# Cycle: .*$`).ReplaceAllString(s, "")
		}
		if f == promptlog.File {
			// Each prompt names the repository of the worker it ran on, so
			// the files' bytes differ; the prompts, rerooted, do not.
			pa, pb := promptlog.Parse(a), promptlog.Parse(b)
			if len(pa) == 0 || len(pa) != len(pb) {
				t.Errorf("%s: %d prompts replicated, %d direct", f, len(pb), len(pa))
			}
			for stem, text := range pa {
				got := strings.ReplaceAll(pb[stem], truth.root, "ROOT")
				for _, rep := range r.reps {
					got = strings.ReplaceAll(got, rep.root, "ROOT")
				}
				if norm([]byte(text), direct.root, dsum.Run) != norm([]byte(got), truth.root, sum.Run) {
					t.Errorf("prompt %s differs:\n%s\n---\n%s", stem, text, got)
				}
			}
			continue
		}
		if f == "current_cycle.md" {
			// Its header names the process's cycle and worktree.
			if !strings.Contains(string(b), "<!-- step b/audit/auditor#2 -->") {
				t.Errorf("%s lacks the last audit:\n%s", f, b)
			}
			continue
		}
		if norm(a, direct.root, dsum.Run) != strings.ReplaceAll(norm(b, truth.root, sum.Run), r.reps[0].root, "ROOT") &&
			norm(a, direct.root, dsum.Run) != strings.ReplaceAll(norm(b, truth.root, sum.Run), r.reps[1].root, "ROOT") {
			t.Errorf("%s differs:\n%s\n---\n%s", f, a, b)
		}
	}
	if d, tr := direct.task("b"), truth.task("b"); d.Stage != tr.Stage || d.Body != tr.Body {
		t.Errorf("task file b: stage %q body %q, want %q %q", tr.Stage, tr.Body, d.Stage, d.Body)
	}
}

// A snapshot or a batch naming a path that leaves the directory it
// belongs in is refused, naming it, and writes nothing.
func TestReplicaRefusesEscapingPaths(t *testing.T) {
	ctx := context.Background()
	truth := newEnv(t, passAll, [2]string{"a", "code"})
	var snap replica.Snapshot
	var batch replica.Batch
	_, err := truth.eng.StartWith(ctx, Options{}, func(ctx context.Context, run string, it store.Item) error {
		s, err := truth.eng.Replica().Export(ctx, run, it.ID)
		snap = s
		if err != nil {
			return err
		}
		rep := replicaEnv(t, truth)
		is, err := hydrated(ctx, rep.eng, s)
		if err != nil {
			return err
		}
		defer is.Close()
		if _, err := is.Begin(ctx); err != nil {
			return err
		}
		batch, err = is.TakeBatch(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "pwned")
	rel, _ := filepath.Rel(itemDir(truth.root, snap.Run.ID, "a"), outside)
	tests := []struct {
		name string
		snap func(*replica.Snapshot)
		want string
	}{
		{"file", func(s *replica.Snapshot) {
			s.Files = append(s.Files, replica.File{Path: filepath.ToSlash(rel), Text: "x"})
		}, "leaves its directory"},
		{"task file ref", func(s *replica.Snapshot) {
			s.Items = append([]store.Item(nil), s.Items...)
			s.Items[0].Ref = outside
		}, "task file: path " + outside + " is outside"},
		{"step output", func(s *replica.Snapshot) {
			s.Steps = append(s.Steps, store.Step{RunID: s.Run.ID, ItemID: "a", ID: "a/x", OutputPath: filepath.Join(s.Root, "tasks", "a.md")})
		}, "step a/x: output: path"},
		{"task content", func(s *replica.Snapshot) { s.Task = &replica.File{Path: "../x.md", Text: "x"} }, "is not the item's task file"},
		{"task file in .git", func(s *replica.Snapshot) {
			s.Items = append([]store.Item(nil), s.Items...)
			s.Items[0].Ref = filepath.Join(s.Root, ".git", "hooks", "post-checkout")
			s.Task = &replica.File{Path: ".git/hooks/post-checkout", Text: "#!/bin/sh\ntouch " + outside + "\n"}
		}, "want a Markdown file outside .git and .cadre"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := replicaEnv(t, truth)
			s := snap
			tt.snap(&s)
			err := rep.eng.Replica().Hydrate(ctx, s)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want containing %q", err, tt.want)
			}
			if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("written outside: %v", err)
			}
			if _, err := rep.eng.Replica().Seq(ctx, s.Run.ID, "a"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("hydrated anyway: %v", err)
			}
		})
	}
	b := batch
	b.Files = []replica.File{{Path: filepath.ToSlash(rel), Text: "x"}}
	if _, err := truth.eng.Replica().Apply(ctx, b); err == nil || !strings.Contains(err.Error(), "want a file inside the item's directory") {
		t.Errorf("batch with an escaping file: %v", err)
	}
	b = batch
	b.Task = &replica.File{Path: "../x.md", Text: "x"}
	if _, err := truth.eng.Replica().Apply(ctx, b); err == nil || !strings.Contains(err.Error(), "is not the item's task file") {
		t.Errorf("batch with another task file: %v", err)
	}
	if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("written outside: %v", err)
	}
	if seq, _ := truth.st.AppliedSeq(ctx, batch.Run, "a"); seq != 0 {
		t.Errorf("a refused batch was applied: %d", seq)
	}
}

// The batches of an issue on the cadre workflow (analysis, planning, one
// plan task with its review, checks, the pull request's text) stay far
// below Temporal's 2 MB payload limit; their sizes are logged (go test
// -v -run CadreWorkflowBatch) for the figures in the docs.
func TestCadreWorkflowBatchSizes(t *testing.T) {
	ctx := context.Background()
	truth := newEnv(t, func(inv runner.Invocation) runner.Result {
		out := strings.Repeat("Some analysis of the code base, as an agent writes it.\n", 40) +
			"### SIGNAL BLOCK\n- Agent: x\n- Result: SUCCESS\n- Confidence: 9\n- Verdict: pass\n- Rating: 9\n"
		if inv.Role == "implementation-planner" {
			out = "```json\n" + `{"tasks":[{"id":"a"}]}` + "\n```\n" + out
		}
		return runner.Result{Output: out, Usage: event.Usage{InputTokens: 1000, OutputTokens: 200, CostUSD: 0.01}}
	}, [2]string{"t", "code"})
	r := &replicated{t: t, truth: truth}
	r.reps = [2]*env{replicaEnv(t, truth), replicaEnv(t, truth)}
	sum, err := truth.eng.StartWith(ctx, Options{Workflow: "cadre"}, func(ctx context.Context, run string, it store.Item) error {
		var b executor.Begun
		if err := r.step(ctx, run, it.ID, func(s *ItemSteps) (err error) { b, err = s.Begin(ctx); return err }); err != nil || b.Status != "" {
			return err
		}
		def, _ := truth.eng.Workflows().Get(b.Workflow)
		x := &replicaFlow{r: r, run: run, item: it.ID, visits: map[string]int{}}
		res, err := (&workflow.Interp{Item: it.ID, Defs: truth.eng.Workflows(), Exec: x, Lim: b.Limits, Roles: truth.eng.RoleExists}).Run(ctx, def)
		if err != nil {
			return err
		}
		return r.step(ctx, run, it.ID, func(s *ItemSteps) error { _, err := s.End(ctx, executor.Ending{Result: res}); return err })
	})
	r.close()
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("%v %+v", err, sum)
	}
	steps, _ := truth.st.Steps(ctx, sum.Run)
	sorted := append([]int(nil), r.sizes...)
	sort.Ints(sorted)
	total := 0
	for _, n := range sorted {
		total += n
	}
	t.Logf("%d steps journaled, %d batches: sizes %v bytes; median %d, max %d, total %d", len(steps), len(r.sizes), r.sizes,
		sorted[len(sorted)/2], sorted[len(sorted)-1], total)
	if len(steps) < 11 {
		t.Errorf("%d steps journaled, want the cadre workflow's", len(steps))
	}
	if max := sorted[len(sorted)-1]; max > 512<<10 {
		t.Errorf("largest batch %d bytes", max)
	}
}

// replicaFlow is the interpreter's Exec through replicated steps.
type replicaFlow struct {
	r         *replicated
	run, item string
	mu        sync.Mutex
	visits    map[string]int
}

func (f *replicaFlow) Agent(ctx context.Context, c workflow.AgentCall) (out workflow.Outcome, err error) {
	f.mu.Lock()
	f.visits[c.Role]++
	v := f.visits[c.Role]
	f.mu.Unlock()
	err = f.r.step(ctx, f.run, f.item, func(s *ItemSteps) (err error) { out, err = s.Agent(ctx, c, v); return err })
	return out, err
}

func (f *replicaFlow) Action(ctx context.Context, c workflow.ActionCall) (out workflow.Outcome, err error) {
	err = f.r.step(ctx, f.run, f.item, func(s *ItemSteps) (err error) { out, err = s.Action(ctx, c); return err })
	return out, err
}

func (f *replicaFlow) Human(ctx context.Context, c workflow.HumanCall) (workflow.Answer, error) {
	return workflow.Answer{}, workflow.ErrPaused
}

func (f *replicaFlow) Warn(string) {}

// The files a replica's batches continue (send only the new end of) are
// the home's copies: a file hydrated from the snapshot grows from the
// snapshot's content, while one the snapshot lacks (a log of an earlier
// visit here, which the home holds otherwise) and a log sent cut are sent
// whole when they change. Either way the home's copy ends as the
// replica's; a stale file left unchanged is not sent.
func TestReplicaBatchesContinueTheHomesCopies(t *testing.T) {
	ctx := context.Background()
	truth := newEnv(t, passAll, [2]string{"a", "code"})
	rep := replicaEnv(t, truth)
	_, err := truth.eng.StartWith(ctx, Options{}, func(ctx context.Context, run string, it store.Item) error {
		home, here := itemDir(truth.root, run, it.ID), itemDir(rep.root, run, it.ID)
		write := func(dir, rel, s string, flag int) {
			t.Helper()
			p := filepath.Join(dir, filepath.FromSlash(rel))
			os.MkdirAll(filepath.Dir(p), 0o755)
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|flag, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(s); err != nil {
				t.Fatal(err)
			}
		}
		// From an earlier visit of the item here, which the home's copies
		// moved on from since.
		write(home, "logs/x.log", "the home's log of the step, sent from another worker\n", os.O_TRUNC)
		write(home, "current_cycle.md", "the home's cycle log\n", os.O_TRUNC)
		write(here, "logs/x.log", "this worker's log\n", os.O_TRUNC)
		write(here, "current_cycle.md", "this worker's old cycle log\n", os.O_TRUNC)
		write(here, "logs/stale.log", "this worker's log of a step retried elsewhere\n", os.O_TRUNC)
		write(home, "logs/stale.log", "the home's log of that step\n", os.O_TRUNC)
		if err := promptlog.Append(here, "old-1", "an old prompt, sent home on that visit"); err != nil {
			return err
		}
		if err := promptlog.Append(home, "other-1", "a prompt of a step on another worker"); err != nil {
			return err
		}
		snap, err := truth.eng.Replica().Export(ctx, run, it.ID)
		if err != nil {
			return err
		}
		var got replica.Snapshot
		roundTrip(t, snap, &got)
		is, err := hydrated(ctx, rep.eng, got)
		if err != nil {
			return err
		}
		defer is.Close()
		take := func() map[string]replica.File {
			t.Helper()
			b, err := is.TakeBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var sent replica.Batch
			roundTrip(t, b, &sent)
			if ok, err := truth.eng.Replica().Apply(ctx, sent); err != nil || !ok {
				t.Fatalf("apply %s: %v, %v", b.BatchKey, ok, err)
			}
			files := map[string]replica.File{}
			for _, f := range b.Files {
				files[f.Path] = f
			}
			return files
		}
		same := func(rel string) {
			t.Helper()
			a, err1 := os.ReadFile(filepath.Join(home, filepath.FromSlash(rel)))
			b, err2 := os.ReadFile(filepath.Join(here, filepath.FromSlash(rel)))
			if err1 != nil || err2 != nil || string(a) != string(b) {
				t.Errorf("%s: the home has %q (%v), the replica %q (%v)", rel, a, err1, b, err2)
			}
		}
		// A step: the log and the cycle log grow, a long log is written.
		write(here, "logs/x.log", "the next try\n", os.O_APPEND)
		write(here, "current_cycle.md", "a step\n", os.O_APPEND)
		write(here, "logs/long.log", strings.Repeat("x", replica.MaxLogBytes+10)+"\n", os.O_TRUNC)
		files := take()
		if f, ok := files["logs/x.log"]; !ok || f.At != 0 {
			t.Errorf("a log the snapshot lacked: sent %v from %d, want whole", ok, f.At)
		}
		same("logs/x.log")
		if f := files["current_cycle.md"]; f.At != int64(len("the home's cycle log\n")) {
			t.Errorf("the cycle log sent from %d, want from the snapshot's end", f.At)
		}
		same("current_cycle.md")
		if _, ok := files[promptlog.File]; ok {
			t.Errorf("an unchanged file was sent")
		}
		// The next step: the long log, sent cut, grows; a prompt is added
		// to a prompts file the home has other prompts in.
		write(here, "logs/long.log", "more\n", os.O_APPEND)
		if err := promptlog.Append(here, "new-1", "the next step's prompt"); err != nil {
			return err
		}
		files = take()
		if f, ok := files[promptlog.File]; !ok || !f.Append || strings.Contains(f.Text, "old-1") {
			t.Errorf("prompts: sent %v %+v, want the new prompt alone, appended", ok, f)
		}
		if got, err := promptlog.Read(home); err != nil || len(got) != 2 || got["new-1"] != "the next step's prompt" || got["other-1"] == "" {
			t.Errorf("the home's prompts: %q %v", got, err)
		}
		if f, ok := files["logs/long.log"]; !ok || f.At != 0 {
			t.Errorf("a log sent cut: sent %v from %d, want whole", ok, f.At)
		}
		data, err := os.ReadFile(filepath.Join(home, "logs", "long.log"))
		if err != nil || !strings.HasPrefix(string(data), "[cadre: log cut") || !strings.HasSuffix(string(data), "x\nmore\n") {
			t.Errorf("the home's long log: %v, %.40q…%q", err, data, data[max(len(data)-10, 0):])
		}
		// A step removes a file the home has this copy of, and a stale
		// log the snapshot lacked: only the first goes at home.
		os.MkdirAll(filepath.Join(here, "outputs"), 0o755)
		write(here, "outputs/gone.md", "an output\n", os.O_TRUNC)
		take()
		os.Remove(filepath.Join(here, "outputs", "gone.md"))
		os.Remove(filepath.Join(here, "logs", "stale.log"))
		b, err := is.TakeBatch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(b.Removed, []string{"outputs/gone.md"}) {
			t.Errorf("removed %q, want the output alone", b.Removed)
		}
		if ok, err := truth.eng.Replica().Apply(ctx, b); err != nil || !ok {
			t.Fatalf("apply %s: %v, %v", b.BatchKey, ok, err)
		}
		if _, err := os.Stat(filepath.Join(home, "outputs", "gone.md")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the home's output is still there: %v", err)
		}
		if _, err := os.Stat(filepath.Join(home, "logs", "stale.log")); err != nil {
			t.Errorf("the home's log went with the replica's stale one: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Two processes of the home (the starter and a worker sharing its state
// directory) applying one item's batches at once, one of them retrying
// batch 1 while the other applies 1 and 2: batch 1 is applied once, and
// the item's files are batch 2's, never rolled back to batch 1's.
func TestApplyBatchRacingAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	truth := newEnv(t, passAll, [2]string{"a", "code"})
	rep := replicaEnv(t, truth)
	// The other process: its own engine and connections to the same
	// journal, so nothing in one process orders the two.
	st, err := store.Open(ctx, filepath.Join(truth.root, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	other, err := New(ctx, fakeDeps(t, truth.root, st, truth.fake, event.NewBus(nil)))
	if err != nil {
		t.Fatal(err)
	}
	var batches []replica.Batch
	var run string
	_, err = truth.eng.StartWith(ctx, Options{}, func(ctx context.Context, r string, it store.Item) error {
		run = r
		snap, err := truth.eng.Replica().Export(ctx, run, it.ID)
		if err != nil {
			return err
		}
		is, err := hydrated(ctx, rep.eng, snap)
		if err != nil {
			return err
		}
		defer is.Close()
		for _, text := range []string{"batch 1's notes\n", "batch 2's notes, longer\n"} {
			if err := os.WriteFile(filepath.Join(itemDir(rep.root, run, it.ID), "notes.md"), []byte(text), 0o644); err != nil {
				return err
			}
			b, err := is.TakeBatch(ctx)
			if err != nil {
				return err
			}
			batches = append(batches, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The retry stops as it is about to write batch 1's files until the
	// first process is done with both batches, or has waited long enough
	// to be waiting on the retry.
	paused, done := make(chan struct{}), make(chan struct{})
	other.Replica().Applying = func(k store.BatchKey) {
		if k.Seq == 1 {
			close(paused)
			select {
			case <-done:
			case <-time.After(2 * time.Second):
			}
		}
	}
	type result struct {
		ok  bool
		err error
	}
	retry := make(chan result, 1)
	go func() {
		ok, err := other.Replica().Apply(ctx, batches[0])
		retry <- result{ok, err}
	}()
	<-paused
	var first [2]result
	go func() {
		defer close(done)
		for i, b := range batches {
			first[i].ok, first[i].err = truth.eng.Replica().Apply(ctx, b)
		}
	}()
	<-done
	r := <-retry
	if r.err != nil || first[0].err != nil || first[1].err != nil {
		t.Fatalf("apply: retry %v, first %v, %v", r.err, first[0].err, first[1].err)
	}
	if r.ok == first[0].ok || !first[1].ok {
		t.Errorf("batch 1 applied by the retry %v and the first %v, batch 2 %v: want batch 1 once, batch 2", r.ok, first[0].ok, first[1].ok)
	}
	data, err := os.ReadFile(filepath.Join(itemDir(truth.root, run, "a"), "notes.md"))
	if err != nil || string(data) != "batch 2's notes, longer\n" {
		t.Errorf("the home's notes: %q, %v; want batch 2's", data, err)
	}
	if seq, err := truth.st.AppliedSeq(ctx, run, "a"); seq != 2 || err != nil {
		t.Errorf("applied seq %d, %v; want 2", seq, err)
	}
}

// hydrated hydrates snap in eng's journal and opens its item there.
func hydrated(ctx context.Context, eng *Engine, snap replica.Snapshot) (*ItemSteps, error) {
	if err := eng.Replica().Hydrate(ctx, snap); err != nil {
		return nil, err
	}
	return openItem(ctx, eng, snap.Run.ID, snap.Item)
}

// openItem opens an item of a run of eng, as an executor does.
func openItem(ctx context.Context, eng *Engine, run, item string) (*ItemSteps, error) {
	rs, err := eng.OpenRun(ctx, run)
	if err != nil {
		return nil, err
	}
	return rs.OpenItem(ctx, item)
}

// itemDir is the directory of an item of a run under root.
func itemDir(root, run, item string) string {
	return filepath.Join(root, ".cadre", "runs", run, "items", item)
}

// readGlob reads the one file pattern names (an agent step's output,
// whose name holds a token).
func readGlob(pattern string) ([]byte, error) {
	m, err := filepath.Glob(pattern)
	if err != nil || len(m) != 1 {
		return nil, fmt.Errorf("%s: %d files (%v)", pattern, len(m), err)
	}
	return os.ReadFile(m[0])
}
