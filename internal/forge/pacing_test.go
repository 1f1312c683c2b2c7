package forge_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/forge/forgetest"
)

// watch reports what c's callers wait for on the returned channel.
func watch(c *forge.Client) <-chan string {
	waits := make(chan string, 64)
	forge.OnWait(c, func(what string) { waits <- what })
	return waits
}

// fleet runs f in n goroutines and collects their errors; wait returns
// them once all are done.
func fleet(n int, f func(i int) error) (wait func() []error) {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	return func() []error {
		wg.Wait()
		var out []error
		for _, err := range errs {
			if err != nil {
				out = append(out, err)
			}
		}
		return out
	}
}

// With ample budget, comments on three issues are in flight at once even
// with the default gap; with a low budget they queue, one at a time and
// spaced. Every write is held by the fake until all three have either
// arrived or queued, so the test sees concurrency without timing it.
func TestWritesOverlapOnlyWithAmpleBudget(t *testing.T) {
	tests := []struct {
		name        string
		remaining   int
		wantArrived int
		wantQueued  int
		wantSleeps  []time.Duration
	}{
		{name: "ample budget", remaining: 4000, wantArrived: 3},
		{name: "low budget", remaining: 400, wantArrived: 1, wantQueued: 2,
			wantSleeps: []time.Duration{250 * time.Millisecond, 250 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c, clk := setup(t, forge.WithWriteGap(250*time.Millisecond))
			srv.SetRateLimit(tt.remaining, 5000)
			var issues []int
			for range 3 {
				issues = append(issues, srv.AddIssue("o", "r", forgetest.Issue{Title: "t"}))
			}
			waits := watch(c)
			arrived := srv.HoldWrites()
			wait := fleet(3, func(i int) error {
				_, err := c.EnsureComment(ctx, "o", "r", issues[i], "cadre:r:i:start", "hi")
				return err
			})
			var gotArrived, gotQueued int
			for gotArrived+gotQueued < 3 {
				select {
				case <-arrived:
					gotArrived++
				case what := <-waits:
					if what != "queue" {
						t.Errorf("waited for %q", what)
					}
					gotQueued++
				}
			}
			srv.ReleaseWrites()
			if errs := wait(); len(errs) > 0 {
				t.Fatal(errs)
			}
			if gotArrived != tt.wantArrived || gotQueued != tt.wantQueued {
				t.Errorf("%d writes in flight and %d queued, want %d and %d", gotArrived, gotQueued, tt.wantArrived, tt.wantQueued)
			}
			if m := srv.MaxParallelWrites(); m != tt.wantArrived {
				t.Errorf("fake saw %d writes at once, want %d", m, tt.wantArrived)
			}
			if diff := cmp.Diff(tt.wantSleeps, clk.sleeps()); diff != "" {
				t.Errorf("sleeps (-want +got):\n%s", diff)
			}
			for _, n := range issues {
				if cs := srv.Comments("o", "r", n); len(cs) != 1 {
					t.Errorf("issue %d has %d comments", n, len(cs))
				}
			}
		})
	}
}

// A second write to a resource with one in flight waits in the client,
// whether it comes from the same kind of call (two comments on one issue:
// the item lock) or another (a comment on a pull request being labelled:
// the write lock), while a write to another resource goes through.
func TestWritesToOneResourceNeverOverlap(t *testing.T) {
	srv, c, _ := setup(t) // no gap: only the per-resource locks order writes
	a := srv.AddIssue("o", "r", forgetest.Issue{Title: "a"})
	b := srv.AddIssue("o", "r", forgetest.Issue{Title: "b"})
	pr := srv.AddPR("o", "r", forgetest.PR{Title: "Fix", Head: "cadre/1", Base: "main"})
	waits := watch(c)
	arrived := srv.HoldWrites()

	// next returns the next event: "arrived METHOD PATH" or "wait WHAT".
	next := func() string {
		select {
		case cl := <-arrived:
			return "arrived " + cl.Method + " " + cl.Path
		case what := <-waits:
			return "wait " + what
		}
	}
	expect := func(want string) {
		t.Helper()
		if got := next(); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	var waitAll []func() []error
	start := func(f func() error) { waitAll = append(waitAll, fleet(1, func(int) error { return f() })) }
	comment := func(n int, kind string) func() error {
		return func() error {
			_, err := c.EnsureComment(ctx, "o", "r", n, "cadre:r:i:"+kind, kind)
			return err
		}
	}

	start(comment(a, "start"))
	expect(fmt.Sprintf("arrived POST /repos/o/r/issues/%d/comments", a))
	start(comment(a, "done"))
	expect(fmt.Sprintf("wait item o/r#%d", a))
	start(func() error {
		p := newPR()
		p.Head, p.Title, p.Body, p.Base = "cadre/1", "Fix", "", "main"
		_, _, err := c.EnsurePR(ctx, "o", "r", p)
		return err
	})
	expect(fmt.Sprintf("arrived POST /repos/o/r/issues/%d/labels", pr))
	start(comment(pr, "start"))
	expect(fmt.Sprintf("wait write o/r#%d", pr))
	start(comment(b, "start"))
	expect(fmt.Sprintf("arrived POST /repos/o/r/issues/%d/comments", b))

	srv.ReleaseWrites()
	for _, w := range waitAll {
		if errs := w(); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	if m := srv.MaxParallelWritesToOne(); m != 1 {
		t.Errorf("fake saw %d writes at once to one resource, want 1", m)
	}
	if m := srv.MaxParallelWrites(); m != 3 {
		t.Errorf("fake saw %d writes at once, want 3 (a, the pull request, b)", m)
	}
	for n, want := range map[int]int{a: 2, b: 1, pr: 1} {
		if got := len(srv.Comments("o", "r", n)); got != want {
			t.Errorf("#%d has %d comments, want %d", n, got, want)
		}
	}
}

// A secondary limit on one write blocks every later call for its
// retry-after, the write is sent again, and writes stay paced (one at a
// time, the gap apart) until the calm-down ends, when they overlap again.
func TestSecondaryLimitPacesLaterWrites(t *testing.T) {
	srv, c, clk := setup(t, forge.WithWriteGap(250*time.Millisecond))
	var issues []int
	for range 5 {
		issues = append(issues, srv.AddIssue("o", "r", forgetest.Issue{Title: "t"}))
	}
	post := func(i int) error {
		_, err := c.EnsureComment(ctx, "o", "r", issues[i], "cadre:r:i:start", "hi")
		return err
	}
	srv.Fail(2, forgetest.RetryAfter(http.StatusForbidden, 5)) // 1: list comments, 2: post
	if err := post(0); err != nil {
		t.Fatal(err)
	}
	if errs := fleet(2, func(i int) error { return post(1 + i) })(); len(errs) > 0 {
		t.Fatal(errs)
	}
	// The retry waited out retry-after; the two later writes queued and
	// were spaced.
	want := []time.Duration{5 * time.Second, 250 * time.Millisecond, 250 * time.Millisecond}
	if diff := cmp.Diff(want, clk.sleeps()); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
	var posts []string
	for _, cl := range srv.Calls() {
		if cl.Method == http.MethodPost {
			posts = append(posts, fmt.Sprintf("%s %d", cl.Path, cl.Status))
		}
	}
	first := fmt.Sprintf("/repos/o/r/issues/%d/comments", issues[0])
	if len(posts) != 4 || posts[0] != first+" 403" || posts[1] != first+" 201" {
		t.Errorf("posts %q: want the limited one, its retry, then the other two", posts)
	}
	if m := srv.MaxParallelWrites(); m != 1 {
		t.Errorf("fake saw %d writes at once after a secondary limit, want 1", m)
	}

	// After the calm-down, writes go unpaced again: no more sleeps.
	clk.advance(11 * time.Minute)
	if errs := fleet(2, func(i int) error { return post(3 + i) })(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if diff := cmp.Diff(want, clk.sleeps()); diff != "" {
		t.Errorf("sleeps after the calm-down (-want +got), want none new:\n%s", diff)
	}
}

// A write that gives up on a rate limit still leaves the limit in force:
// the next call, a read, waits it out before anything is sent.
func TestRateLimitOutlivesTheCallThatMetIt(t *testing.T) {
	srv, c, clk := setup(t, forge.WithRetries(0))
	a := srv.AddIssue("o", "r", forgetest.Issue{Title: "a"})
	b := srv.AddIssue("o", "r", forgetest.Issue{Title: "b"})
	srv.Fail(2, forgetest.RetryAfter(http.StatusTooManyRequests, 30))
	if _, err := c.EnsureComment(ctx, "o", "r", a, "cadre:r:i:start", "hi"); err == nil {
		t.Fatal("a write refused with no retries left succeeded")
	}
	if _, err := c.EnsureComment(ctx, "o", "r", b, "cadre:r:i:start", "hi"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]time.Duration{30 * time.Second}, clk.sleeps()); diff != "" {
		t.Errorf("sleeps (-want +got):\n%s", diff)
	}
	if n := srv.Count(http.MethodPost, fmt.Sprintf("/repos/o/r/issues/%d/comments", a)); n != 1 {
		t.Errorf("limited write sent %d times, want 1", n)
	}
}

// A zero gap turns pacing off even when the budget is low: no queue, no
// sleeps. The same writes with a gap are spaced.
func TestZeroWriteGapDisablesSpacing(t *testing.T) {
	for _, tt := range []struct {
		gap  time.Duration
		want []time.Duration
	}{
		{0, nil},
		{250 * time.Millisecond, []time.Duration{250 * time.Millisecond, 250 * time.Millisecond}},
	} {
		t.Run(tt.gap.String(), func(t *testing.T) {
			srv, c, clk := setup(t, forge.WithWriteGap(tt.gap))
			srv.SetRateLimit(50, 5000)
			for i := range 3 {
				n := srv.AddIssue("o", "r", forgetest.Issue{Title: "t"})
				if _, err := c.EnsureComment(ctx, "o", "r", n, fmt.Sprint("cadre:r:i:", i), "hi"); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tt.want, clk.sleeps()); diff != "" {
				t.Errorf("sleeps (-want +got):\n%s", diff)
			}
		})
	}
}
