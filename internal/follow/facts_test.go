package follow

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/store"
)

// fedFollower follows pull requests #1 and #2 (heads a1 and b1, their
// check running) with webhooks trusted for 30 minutes, after a first
// pass; now moves its clock.
func fedFollower(t *testing.T) (f *Follower, host *fakeHost, now *time.Time) {
	t.Helper()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now = &t0
	host = &fakeHost{views: map[int]int{}, prs: map[int]*fakePR{
		1: {head: "a1", updated: t0, pending: true, checks: true},
		2: {head: "b1", updated: t0, pending: true, checks: true},
	}}
	cfg := config.Default().Follow
	cfg.Merge = "squash"
	f = &Follower{Store: journalPRs(t, 2), Host: host, Trees: &fakeTrees{base: "m1"}, Config: cfg, Base: "main",
		Trust: 30 * time.Minute, Now: func() time.Time { return *now }}
	if _, err := f.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	host.views = map[int]int{}
	return f, host, now
}

// viewOf is what a woken pass sees of pull request pr.
func viewOf(t *testing.T, f *Follower, pr int) (View, bool) {
	t.Helper()
	st := f.state()
	v, told, err := f.view(context.Background(), Item{Run: "r", ID: "x", PR: pr}, &poll{changed: map[int]Head{}, base: st.Base, mark: st.Mark})
	if err != nil {
		t.Fatal(err)
	}
	return v, told
}

// A check's delivery is taken as it stands: the pull request at its
// commit is not asked about, its other checks (asked before) are kept,
// and a run delivered late (an older id) does not undo a newer one.
func TestDeliveredRunsAreTaken(t *testing.T) {
	f, host, _ := fedFollower(t)
	fail := &Check{Name: "test", Conclusion: "failure", Summary: "1 failed"}
	f.Apply([]Fact{
		{Commit: "a1", Run: &Run{Name: "lint", Order: 4, Done: true, Passed: true}},
		{Commit: "a1", Run: &Run{Name: "test", Order: 5, Done: true, Failed: fail}},
		{Commit: "a1", Run: &Run{Name: "test", Order: 3}}, // queued before: out of order
	})
	v, told := viewOf(t, f, 1)
	if !told || host.views[1] != 0 {
		t.Errorf("told %v, asked %d times; want it taken as delivered", told, host.views[1])
	}
	if v.Pending || len(v.Failed) != 1 || v.Failed[0] != *fail || len(v.Passed) != 1 || v.Passed[0] != "lint" {
		t.Errorf("view %+v; want test failed and lint passed", v)
	}
	if act := Decide(v, Past{}, f.Config, "m1", 0); act.Do != React || act.Kind != CIFailed {
		t.Errorf("Decide = %+v, want a ci_failed reaction", act)
	}
	f.Apply([]Fact{{Commit: "a1", Run: &Run{Name: "test", Order: 6}}}) // re-run
	if v, _ := viewOf(t, f, 1); !v.Pending || len(v.Failed) != 0 || v.Running[0] != "test" {
		t.Errorf("after a re-run: %+v, want test running", v)
	}
	if _, told := viewOf(t, f, 2); told || host.views[2] != 1 {
		t.Errorf("#2, told of nothing: told %v, asked %d times; want asked once", told, host.views[2])
	}
}

// A pull request waiting on a check deliveries told of is taken as told
// only within Trust: past it, its checks are asked for, so a delivery
// lost is made up for.
func TestDeliveredRunsTrustedForAWhile(t *testing.T) {
	f, host, now := fedFollower(t)
	f.Apply([]Fact{{Commit: "a1", Run: &Run{Name: "test", Order: 5}}})
	if _, told := viewOf(t, f, 1); !told || host.views[1] != 0 {
		t.Fatalf("within Trust: told %v, asked %d; want taken", told, host.views[1])
	}
	*now = now.Add(31 * time.Minute)
	if _, told := viewOf(t, f, 1); told || host.views[1] != 1 || host.fed[1] != 0 {
		t.Errorf("past Trust: told %v, asked %d (%d without its checks); want its checks asked", told, host.views[1], host.fed[1])
	}
}

// A new head a pull_request delivery tells of, once checks' deliveries
// come in, awaits its checks from them: nothing is asked of it.
func TestDeliveredHeadAwaitsItsChecks(t *testing.T) {
	f, host, now := fedFollower(t)
	f.Apply([]Fact{{Commit: "b1", Run: &Run{Name: "test", Order: 1, Done: true, Passed: true}}})
	f.Apply([]Fact{{PR: 1, Pull: &Head{Number: 1, State: "open", Head: "a2", Base: "main", Updated: now.Add(time.Second)}}})
	v, told := viewOf(t, f, 1)
	if !told || host.views[1] != 0 || v.Head != "a2" || v.Checked || v.Pending {
		t.Errorf("a new head: told %v, asked %d, view %+v; want a2 without checks, not asked", told, host.views[1], v)
	}
	f.Apply([]Fact{{Commit: "a2", Run: &Run{Name: "test", Order: 9, Done: true, Passed: true}}})
	if v, _ := viewOf(t, f, 1); !v.Checked || v.Pending || len(v.Passed) != 1 {
		t.Errorf("its check delivered: %+v", v)
	}
	// A review is asked about, but not the checks deliveries told.
	f.Apply([]Fact{{PR: 1, Ask: true}})
	if _, told := viewOf(t, f, 1); !told || host.views[1] != 1 || host.fed[1] != 1 {
		t.Errorf("a review: told %v, asked %d (%d without checks); want asked once, without its checks, which the deliveries told", told, host.views[1], host.fed[1])
	}
}

// What deliveries say is never enough to merge: a head they make look
// green and approved is asked about first, and not merged while GitHub
// says its checks still run.
func TestMergeAsksFirst(t *testing.T) {
	ctx := context.Background()
	f, host, _ := fedFollower(t)
	host.prs[1].approved = true // approved, though its check still runs
	f.Apply([]Fact{{PR: 1, Ask: true}})
	if _, err := f.Woken(ctx); err != nil {
		t.Fatal(err)
	}
	f.Apply([]Fact{{Commit: "a1", Run: &Run{Name: "test", Order: 5, Done: true, Passed: true}}})
	host.views = map[int]int{}
	if _, err := f.Woken(ctx); err != nil {
		t.Fatal(err)
	}
	if host.views[1] != 1 || host.merges != 0 {
		t.Fatalf("green by a delivery, pending on GitHub: asked %d, merged %d; want asked once, not merged", host.views[1], host.merges)
	}
	// Nor when the reviews were asked beside the delivered checks (a
	// review's delivery with the check's).
	f.Apply([]Fact{{Commit: "a1", Run: &Run{Name: "test", Order: 6, Done: true, Passed: true}}, {PR: 1, Ask: true}})
	host.views, host.fed = map[int]int{}, map[int]int{}
	if _, err := f.Woken(ctx); err != nil {
		t.Fatal(err)
	}
	if host.views[1] != 2 || host.fed[1] != 1 || host.merges != 0 {
		t.Fatalf("reviews asked, checks delivered: asked %d (%d without checks), merged %d; want asked again whole, not merged", host.views[1], host.fed[1], host.merges)
	}
	host.prs[1].pending = false
	f.Apply([]Fact{{Commit: "a1", Run: &Run{Name: "test", Order: 7, Done: true, Passed: true}}})
	if tally, err := f.Woken(ctx); err != nil || host.merges != 1 || tally.Merged != 1 {
		t.Fatalf("green on GitHub too: %+v, %v, merged %d; want merged", tally, err, host.merges)
	}
}

// Deliveries about pull requests no item follows, and about commits no
// pull request is at, are not kept past a pass (and Trust): what the
// passes saw stays the size of what is followed.
func TestDeliveriesOfOthersAreNotKept(t *testing.T) {
	f, _, now := fedFollower(t)
	var facts []Fact
	for n := 100; n < 150; n++ {
		c := fmt.Sprint("c", n)
		facts = append(facts, Fact{PR: n, Pull: &Head{Number: n, State: "open", Head: c, Base: "main", Updated: *now}},
			Fact{PR: n, Commit: c, Run: &Run{Name: "test", Order: int64(n), Done: true, Passed: true}})
	}
	facts = append(facts, Fact{Commit: "a1", Run: &Run{Name: "test", Order: 1}})
	f.Apply(facts)
	*now = now.Add(31 * time.Minute)
	if _, err := f.Woken(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := f.state()
	if len(st.PRs) != 2 || st.PRs[1] == nil || st.PRs[2] == nil {
		t.Errorf("kept pull requests %v, want #1 and #2 only", slices.Sorted(maps.Keys(st.PRs)))
	}
	if len(st.Fed) != 1 || st.Fed["a1"] == nil {
		t.Errorf("kept commits %v, want a1 (#1's head) only", slices.Sorted(maps.Keys(st.Fed)))
	}
}

// A push to the base fetches it at the next woken pass only: the ones
// after take the commit fetched.
func TestBasePushFetchedOnce(t *testing.T) {
	f, _, _ := fedFollower(t)
	trees := f.Trees.(*fakeTrees)
	fetches := 0
	f.Trees = countingTrees{trees, &fetches}
	trees.base = "m2"
	f.Apply([]Fact{{Base: true}})
	for range 2 {
		if _, err := f.Woken(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if fetches != 1 || f.state().Base != "m2" {
		t.Errorf("fetched %d times, base %q; want once, m2", fetches, f.state().Base)
	}
}

// countingTrees counts the base's fetches.
type countingTrees struct {
	*fakeTrees
	n *int
}

func (c countingTrees) BaseHead(ctx context.Context) (string, error) {
	*c.n++
	return c.fakeTrees.BaseHead(ctx)
}

// What deliveries told a watch that stopped is not taken by the next
// one: those that came while none listened are lost, so a pull request
// waiting on its checks is asked about, checks and all.
func TestToldBeforeARestartIsAsked(t *testing.T) {
	f, host, now := fedFollower(t)
	mem := &memFile{}
	f.Memory = mem
	f.Apply([]Fact{{Commit: "a1", Run: &Run{Name: "test", Order: 5}}})
	if _, err := f.Woken(context.Background()); err != nil {
		t.Fatal(err)
	}
	if host.views[1] != 0 {
		t.Fatalf("asked about #1 %d times before the restart, want 0", host.views[1])
	}
	again := &Follower{Store: f.Store, Host: host, Trees: f.Trees, Config: f.Config, Base: "main", Memory: mem,
		Trust: f.Trust, Now: func() time.Time { return *now }}
	if _, err := again.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if host.views[1] != 1 || host.fed[1] != 0 {
		t.Errorf("after a restart #1 was asked %d times (%d without its checks), want once with them", host.views[1], host.fed[1])
	}
}

// A pull_request delivery older than what is known (deliveries may come
// out of order) does not take the pull request back to its earlier head.
func TestLateDeliveryOfAnOlderHead(t *testing.T) {
	f, _, now := fedFollower(t)
	f.Apply([]Fact{{Commit: "x", Run: &Run{Name: "test", Order: 1, Done: true, Passed: true}}}) // checks are delivered
	f.Apply([]Fact{
		{PR: 1, Pull: &Head{Number: 1, State: "open", Head: "a3", Base: "main", Updated: now.Add(2 * time.Second)}},
		{PR: 1, Pull: &Head{Number: 1, State: "open", Head: "a2", Base: "main", Updated: now.Add(time.Second)}},
	})
	if v, _ := viewOf(t, f, 1); v.Head != "a3" {
		t.Errorf("head %q after a late delivery of a2, want a3", v.Head)
	}
}

// A pass that does not look at a pull request (its item waits for a
// person) though it lists it as changed does not leave what was seen of
// it to be taken later: once the person answers, it is asked about, at
// the head it moved to meanwhile.
func TestUnlookedPullRequestIsAskedAgain(t *testing.T) {
	ctx := context.Background()
	f, host, now := fedFollower(t)
	f.Unpause = func(context.Context, Item) error { return nil }
	human := store.Step{RunID: "r", ItemID: "1", ID: "1/follow/ci_failed/human#1", Kind: "human"}
	if err := f.Store.StartStep(ctx, human); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(time.Minute)
	host.prs[1].head, host.prs[1].updated, host.prs[1].pending = "a2", *now, false
	if _, err := f.Pass(ctx); err != nil { // lists #1 as changed, waits for the person
		t.Fatal(err)
	}
	human.Status, human.Result = store.StepCompleted, []byte(`{"approved": true}`)
	if err := f.Store.FinishStep(ctx, human); err != nil {
		t.Fatal(err)
	}
	host.views = map[int]int{}
	if _, err := f.Woken(ctx); err != nil { // the answer's wake: nothing listed
		t.Fatal(err)
	}
	if host.views[1] != 1 {
		t.Errorf("after the answer #1 was asked about %d times, want once (its head moved while it waited)", host.views[1])
	}
	if v, _ := viewOf(t, f, 1); v.Head != "a2" {
		t.Errorf("head %q, want a2", v.Head)
	}
}
