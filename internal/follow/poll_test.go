package follow

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// fakeHost is a code host of open pull requests that counts what it is
// asked.
type fakeHost struct {
	prs   map[int]*fakePR
	views map[int]int
	fed   map[int]int // views asked with the checks known (Head.Fed)
	lists int
	// merge answers Merge; merges counts the calls.
	merge  error
	merges int
}

type fakePR struct {
	head            string
	updated         time.Time
	pending, checks bool
	approved        bool // approved at the head, its one check passed
}

func (h *fakeHost) heads(since time.Time) []Head {
	var out []Head
	for n, p := range h.prs {
		if !p.updated.Before(since) {
			out = append(out, Head{Number: n, State: "open", Head: p.head, Base: "main", Updated: p.updated})
		}
	}
	return out
}

func (h *fakeHost) View(_ context.Context, pr int, _ []string, known *Head) (View, error) {
	h.views[pr]++
	p := h.prs[pr]
	v := View{State: "open", Head: p.head, Base: "main", Pending: p.pending, Checked: p.checks}
	if known != nil {
		v.Head = known.Head // taken as known, as GitHub's View does: one request fewer
	}
	if known != nil && known.Fed {
		if h.fed == nil {
			h.fed = map[int]int{}
		}
		h.fed[pr]++
		v.Pending, v.Checked = false, false // not asked: the follower has them
	} else if p.pending {
		v.Running = []string{"test"}
	}
	if p.approved {
		v.Approved, v.ApprovedHead, v.Passed = true, true, []string{"test"}
	}
	if known == nil {
		yes := true
		v.Mergeable = &yes
	}
	return v, nil
}
func (h *fakeHost) OpenPRs(context.Context) ([]Head, error) {
	h.lists++
	return h.heads(time.Time{}), nil
}
func (h *fakeHost) UpdatedPRs(_ context.Context, since time.Time) ([]Head, error) {
	h.lists++
	return h.heads(since), nil
}
func (h *fakeHost) Push(context.Context, string, string) error              { return nil }
func (h *fakeHost) Reply(context.Context, int, int64, string, string) error { return nil }
func (h *fakeHost) RequestReview(context.Context, int, []string) error      { return nil }
func (h *fakeHost) Merge(context.Context, int, string, string, string) error {
	h.merges++
	return h.merge
}
func (h *fakeHost) Close(context.Context, int) error                      { return nil }
func (h *fakeHost) Comment(context.Context, int, string, string) error    { return nil }
func (h *fakeHost) Label(context.Context, int, string, bool) error        { return nil }
func (h *fakeHost) Logs(_ context.Context, c []Check) ([]Check, []string) { return c, nil }

type fakeTrees struct {
	base    string
	merges  int
	tree    *workspace.Repo
	removed []string
}

func (t *fakeTrees) Tree(context.Context, Item) (*workspace.Repo, error) { return t.tree, nil }
func (t *fakeTrees) Remove(_ context.Context, it Item) error {
	t.removed = append(t.removed, it.ID)
	return nil
}
func (t *fakeTrees) BaseHead(context.Context) (string, error) { return t.base, nil }
func (t *fakeTrees) Mergeable(context.Context, string, string, string) (bool, error) {
	t.merges++
	return true, nil
}

type memFile struct{ data []byte }

func (m *memFile) Load() ([]byte, error)  { return m.data, nil }
func (m *memFile) Save(data []byte) error { m.data = data; return nil }

// journalPRs journals n items of run r, each with its pull request #i.
func journalPRs(t *testing.T, n int) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var items []store.Item
	for i := 1; i <= n; i++ {
		items = append(items, store.Item{RunID: "r", ID: fmt.Sprint(i), Status: store.ItemCompleted})
	}
	if err := st.CreateRun(ctx, store.Run{ID: "r", Status: store.RunCompleted}, items...); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		rec := store.Step{RunID: "r", ItemID: fmt.Sprint(i), ID: report.PRStepID(fmt.Sprint(i)), Kind: report.KindPR}
		st.StartStep(ctx, rec)
		rec.Status = store.StepCompleted
		rec.Result, _ = json.Marshal(report.PublishRecord{Branch: fmt.Sprint("cadre/", i), Number: i})
		if err := st.FinishStep(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// A pass asks GitHub about a pull request only when it changed (its
// update time), its checks were pending, or its head had none yet; a
// moved base only makes cadre compute mergeability again, here. What was
// seen survives the process (Memory).
func TestPassAsksOnlyAboutChanges(t *testing.T) {
	ctx := context.Background()
	st := journalPRs(t, 3)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	host := &fakeHost{views: map[int]int{}, prs: map[int]*fakePR{
		1: {head: "a1", updated: t0, checks: true},
		2: {head: "b1", updated: t0, checks: true},
		3: {head: "c1", updated: t0}, // no check yet
	}}
	trees := &fakeTrees{base: "m1"}
	mem := &memFile{}
	newFollower := func() *Follower {
		return &Follower{Store: st, Host: host, Trees: trees, Config: config.Default().Follow, Base: "main", Memory: mem}
	}
	f := newFollower()
	pass := func(want map[int]int) {
		t.Helper()
		host.views = map[int]int{}
		if _, err := f.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		for pr := 1; pr <= 3; pr++ {
			if host.views[pr] != want[pr] {
				t.Errorf("pull request #%d asked about %d times, want %d (all: %v)", pr, host.views[pr], want[pr], host.views)
			}
		}
	}
	pass(map[int]int{1: 1, 2: 1, 3: 1})
	pass(map[int]int{3: 1}) // #3 has no check yet
	host.prs[2].updated, host.prs[2].head = t0.Add(time.Minute), "b2"
	host.prs[2].pending = true
	pass(map[int]int{2: 1, 3: 1})
	pass(map[int]int{2: 1, 3: 1}) // #2's checks pending; #3 still has none
	host.prs[2].pending = false
	pass(map[int]int{2: 1, 3: 1})
	pass(map[int]int{3: 1})
	// Checks that appear late (a check run moves no update time) are
	// seen, and then #3 is asked about no more.
	host.prs[3].checks = true
	pass(map[int]int{3: 1})
	pass(map[int]int{})
	trees.base, trees.merges = "m2", 0
	pass(map[int]int{})
	if trees.merges != 3 {
		t.Errorf("the base moved: mergeability computed %d times, want 3", trees.merges)
	}
	// Another process takes up what this one saw.
	f = newFollower()
	pass(map[int]int{})
	host.prs[1].updated = t0.Add(2 * time.Minute)
	pass(map[int]int{1: 1})
}

// Where a head may merge without checks, one without any is asked about
// a few passes only, then taken to have none.
func TestPassStopsAskingWhereNoChecksMayMerge(t *testing.T) {
	ctx := context.Background()
	st := journalPRs(t, 1)
	host := &fakeHost{views: map[int]int{}, prs: map[int]*fakePR{1: {head: "a1", updated: time.Now()}}}
	cfg := config.Default().Follow
	cfg.MergeWithoutChecks = true
	f := &Follower{Store: st, Host: host, Trees: &fakeTrees{base: "m1"}, Config: cfg, Base: "main"}
	for range 6 {
		if _, err := f.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if host.views[1] != uncheckedPasses {
		t.Errorf("asked %d times about a head without checks, want %d", host.views[1], uncheckedPasses)
	}
}

// A merge GitHub refuses because the head moved since it was seen is no
// failure: nothing ends, and the next pass looks again and merges.
func TestMergeOfAMovedHeadWaits(t *testing.T) {
	ctx := context.Background()
	st := journalPRs(t, 1)
	host := &fakeHost{views: map[int]int{}, merge: fmt.Errorf("409: %w", ErrHeadMoved),
		prs: map[int]*fakePR{1: {head: "a1", updated: time.Now(), checks: true, approved: true}}}
	cfg := config.Default().Follow
	cfg.Merge = "squash"
	f := &Follower{Store: st, Host: host, Trees: &fakeTrees{base: "m1"}, Config: cfg, Base: "main"}
	tally, err := f.Pass(ctx)
	if err != nil || host.merges != 1 || tally.Merged != 0 || len(tally.Failed) != 0 {
		t.Fatalf("a moved head: %+v, %v, %d merge calls; want one call, nothing failed or merged", tally, err, host.merges)
	}
	if Ended(ctx, st, "r", "1") != "" {
		t.Fatal("the item ended though its merge was refused")
	}
	host.merge = nil
	if tally, err := f.Pass(ctx); err != nil || tally.Merged != 1 || Ended(ctx, st, "r", "1") != "merged" {
		t.Fatalf("the next pass: %+v, %v, ended %q; want it merged", tally, err, Ended(ctx, st, "r", "1"))
	}
}

// A fact that asks (a webhook naming a pull request or its head without
// saying all) makes the next pass ask about it though nothing the list
// shows changed.
func TestAskingFactAsksAgain(t *testing.T) {
	ctx := context.Background()
	st := journalPRs(t, 3)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	host := &fakeHost{views: map[int]int{}, prs: map[int]*fakePR{
		1: {head: "a1", updated: t0, checks: true},
		2: {head: "b1", updated: t0, checks: true},
		3: {head: "c1", updated: t0, checks: true},
	}}
	f := &Follower{Store: st, Host: host, Trees: &fakeTrees{base: "m1"}, Config: config.Default().Follow, Base: "main", Memory: &memFile{}}
	pass := func(want map[int]int) {
		t.Helper()
		host.views = map[int]int{}
		if _, err := f.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		for pr := 1; pr <= 3; pr++ {
			if host.views[pr] != want[pr] {
				t.Errorf("pull request #%d asked about %d times, want %d", pr, host.views[pr], want[pr])
			}
		}
	}
	pass(map[int]int{1: 1, 2: 1, 3: 1})
	pass(map[int]int{})
	f.Apply([]Fact{{PR: 1, Ask: true}, {Commit: "c1", Ask: true}})
	pass(map[int]int{1: 1, 3: 1})
	pass(map[int]int{})
}
