package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/forge/forgetest"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// BenchmarkFollowBacklog follows 1,000 open pull requests for an hour of
// 60 s passes against the fake GitHub, while every minute 5 of them get a
// push (checks pending, which finish a minute later: one in five fails)
// and 2 a review comment. It reports the requests that count against the
// rate limit in that hour (the target is at most 2,500 of the 5,000) and
// how many passes it took at most to act on a failed check:
//
//	go test ./internal/app -run '^$' -bench FollowBacklog -benchtime 1x
func BenchmarkFollowBacklog(b *testing.B) {
	const prs, pushes, comments = 1000, 5, 2
	for range b.N {
		b.StopTimer()
		ctx := context.Background()
		srv := forgetest.New(b, "tok")
		srv.AddRepo("o", "r")
		// The first pass asks about every pull request: more than an hour's
		// budget at 1,000 of them, which the steady state is measured after.
		srv.SetRateLimit(1_000_000, 1_000_000)
		dir := b.TempDir()
		st, err := store.Open(ctx, filepath.Join(dir, "cadre.db"))
		if err != nil {
			b.Fatal(err)
		}
		items := make([]store.Item, prs)
		for i := range items {
			items[i] = store.Item{RunID: "r", ID: fmt.Sprint(i + 1), Status: store.ItemCompleted}
		}
		if err := st.CreateRun(ctx, store.Run{ID: "r", Status: store.RunCompleted}, items...); err != nil {
			b.Fatal(err)
		}
		sha := func(pr, v int) string { return fmt.Sprintf("%020x%020x", pr, v) }
		number := map[string]int{}
		for i := range prs {
			id := fmt.Sprint(i + 1)
			n := srv.AddPR("o", "r", forgetest.PR{Title: "p" + id, Head: "cadre/" + id, Base: "main", HeadSHA: sha(i+1, 0)})
			srv.SetCheckRun("o", "r", sha(i+1, 0), forgetest.CheckRun{Name: "test", Conclusion: "success"})
			number[id] = n
			rec := store.Step{RunID: "r", ItemID: id, ID: report.PRStepID(id), Kind: report.KindPR}
			if err := st.StartStep(ctx, rec); err != nil {
				b.Fatal(err)
			}
			rec.Status = store.StepCompleted
			rec.Result, _ = json.Marshal(report.PublishRecord{Branch: "cadre/" + id, Number: n})
			if err := st.FinishStep(ctx, rec); err != nil {
				b.Fatal(err)
			}
		}
		tree := dir + "/tree"
		if out, err := exec.Command("sh", "-c", "git init -q "+tree+" && cd "+tree+" && git -c user.name=b -c user.email=b@x commit -q --allow-empty -m x").CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
		cfg := config.Default()
		cfg.Repository, cfg.GitHub.APIURL = "o/r", srv.URL
		gh := app.NewGitHub(app.Workspace{Root: dir, Config: cfg}, func(string) string { return "tok" }, forge.WithWriteGap(0))
		sim := &backlog{srv: srv, sha: sha, version: map[int]int{}, paused: map[int]bool{}, tree: tree}
		f := &follow.Follower{Store: st, Host: sim.host(gh), Steps: sim, Trees: benchTrees{tree}, Config: cfg.Follow, Base: "main",
			Pause: sim.pause, Unpause: func(context.Context, follow.Item) error { return nil }}
		if _, err := f.Pass(ctx); err != nil { // the first pass reads every pull request
			b.Fatal(err)
		}
		first := srv.Counts()
		b.StartTimer()
		for minute := 1; minute <= 60; minute++ {
			sim.minute = minute
			sim.finishChecks()
			for k := range pushes {
				sim.push((minute*pushes+k)*7%prs + 1)
			}
			for k := range comments {
				pr := (minute*comments+k)*13%prs + 1
				srv.AddReviewComment("o", "r", pr, forgetest.ReviewComment{Author: "rita", Association: "MEMBER", Path: "a.go", Line: 1, Body: "nit"})
			}
			if _, err := f.Pass(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		hour := srv.Counts()
		kinds := map[string]int{}
		for _, c := range srv.Calls()[first.Requests:] {
			if c.Status == 304 {
				continue
			}
			parts := strings.Split(c.Path, "/")
			key := c.Method + " " + parts[len(parts)-1]
			if len(parts) > 5 {
				key = c.Method + " " + parts[3] + "/…/" + parts[len(parts)-1]
			}
			kinds[key]++
		}
		b.Logf("charged by kind: %v", kinds)
		b.ReportMetric(float64(first.Charged()), "charged-first-pass")
		b.ReportMetric(float64(hour.Charged()-first.Charged()), "charged/hour")
		b.ReportMetric(float64(hour.Requests-first.Requests), "requests/hour")
		late := 0
		for _, f := range sim.failures {
			if f.acted < 0 && !f.superseded {
				b.Fatalf("the failed check of #%d (minute %d) was never acted on", f.pr, f.minute)
			}
			if f.acted >= 0 {
				late = max(late, f.acted-f.minute)
			}
		}
		b.ReportMetric(float64(late), "passes-to-act-on-ci")
		st.Close()
	}
}

// backlog simulates the pull requests' activity and cadre's fixes.
type backlog struct {
	srv      *forgetest.Server
	sha      func(pr, v int) string
	mu       sync.Mutex
	minute   int
	version  map[int]int // pushes to each pull request so far
	pending  []int       // pull requests whose checks finish next minute
	failures []*failure
	paused   map[int]bool // a human was asked about the pull request
	tree     string       // the tree fixes commit in
}

// failure is a check that failed, and the minute cadre acted on it.
type failure struct {
	pr, minute, acted int
	superseded        bool // a push came before cadre acted
}

// acted notes that cadre acted on pr's failures.
func (s *backlog) acted(pr int) {
	for _, f := range s.failures {
		if f.pr == pr && f.acted < 0 && !f.superseded {
			f.acted = s.minute
		}
	}
}

// push moves pr's head; its check is pending until the next minute.
func (s *backlog) push(pr int) {
	for _, f := range s.failures {
		if f.pr == pr && f.acted < 0 {
			f.superseded = true
		}
	}
	s.version[pr]++
	s.srv.SetPRHead("o", "r", pr, s.sha(pr, s.version[pr]))
	s.srv.SetCheckRun("o", "r", s.sha(pr, s.version[pr]), forgetest.CheckRun{Name: "test", Status: "in_progress"})
	s.pending = append(s.pending, pr)
}

// finishChecks finishes the pending checks: one in five fails.
func (s *backlog) finishChecks() {
	seen := map[int]bool{}
	for i, pr := range s.pending {
		if seen[pr] {
			continue // pushed twice in a minute: one check, of the last push
		}
		seen[pr] = true
		conclusion := "success"
		if i%5 == 0 {
			conclusion = "failure"
			f := &failure{pr: pr, minute: s.minute, acted: -1}
			if s.paused[pr] {
				f.acted = s.minute // a human was asked already
			}
			s.failures = append(s.failures, f)
		}
		s.srv.SetCheckRun("o", "r", s.sha(pr, s.version[pr]), forgetest.CheckRun{Name: "test", Conclusion: conclusion})
	}
	s.pending = nil
}

// Fix is fix-surgeon: it notes when a failure was acted on.
func (s *backlog) Fix(_ context.Context, it follow.Item, _, _ string, fb follow.Feedback) (follow.Fixed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fb.Kind == follow.CIFailed {
		s.acted(it.PR)
	}
	// A commit, so there is something to push.
	if out, err := exec.Command("git", "-C", s.tree, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q", "--allow-empty", "-m", "fix").CombinedOutput(); err != nil {
		return follow.Fixed{}, fmt.Errorf("%v %s", err, out)
	}
	return follow.Fixed{Result: "SUCCESS", Commit: "c0ffee"}, nil
}

// pause is a human asked: out of rounds, the failure is acted on so.
func (s *backlog) pause(_ context.Context, it follow.Item, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused[it.PR] = true
	s.acted(it.PR)
	return nil
}

func (s *backlog) host(gh *app.GitHub) follow.Host { return pushHost{gh, s} }

// pushHost is GitHub whose pushes are the simulation's: a new head with
// its checks pending.
type pushHost struct {
	*app.GitHub
	sim *backlog
}

func (h pushHost) Push(_ context.Context, _, branch string) error {
	var pr int
	fmt.Sscanf(branch, "cadre/%d", &pr)
	h.sim.push(pr)
	return nil
}

// benchTrees is one tree for every item; the base never moves.
type benchTrees struct{ dir string }

func (t benchTrees) Tree(context.Context, follow.Item) (*workspace.Repo, error) {
	return &workspace.Repo{Dir: t.dir}, nil
}
func (benchTrees) Remove(context.Context, follow.Item) error { return nil }
func (benchTrees) BaseHead(context.Context) (string, error)  { return "base", nil }
func (benchTrees) Mergeable(context.Context, string, string, string) (bool, error) {
	return true, nil
}
