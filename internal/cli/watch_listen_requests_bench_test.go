package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/forge/forgetest"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// BenchmarkWebhookRequests follows 1,000 open pull requests for an hour
// against the fake GitHub, twice: polling (a pass every 60 s) and with
// webhooks (a pass woken by each delivery, and a reconcile pass every
// 15 min). In the hour, pushes come evenly spread; each push's check
// finishes two minutes later, one in five failing (and fixed by cadre,
// whose push is one more). Each push and each finished check is a
// delivery. It reports the requests charged to the rate limit in each
// mode (a revalidated answer, 304, is not), the webhooks' as a share of
// polling's, and all requests made:
//
//	go test ./internal/cli -run '^$' -bench WebhookRequests -benchtime 1x
func BenchmarkWebhookRequests(b *testing.B) {
	for _, pushes := range []int{0, 6, 30} {
		b.Run(fmt.Sprintf("pushes=%d/h", pushes), func(b *testing.B) {
			for range b.N {
				poll, pollAll, _ := followHour(b, pushes, false)
				hooks, hooksAll, deliveries := followHour(b, pushes, true)
				b.ReportMetric(float64(poll), "charged/h-polling")
				b.ReportMetric(float64(hooks), "charged/h-webhooks")
				b.ReportMetric(float64(pollAll), "requests/h-polling")
				b.ReportMetric(float64(hooksAll), "requests/h-webhooks")
				b.ReportMetric(float64(deliveries), "deliveries/h")
				b.ReportMetric(100*float64(hooks)/float64(max(poll, 1)), "%-of-polling")
			}
		})
	}
}

// hourSim is an hour of a repository's activity on the fake GitHub.
type hourSim struct {
	srv      *forgetest.Server
	tree     string
	now      time.Duration // into the hour
	version  map[int]int
	pending  []timed // sorted by at
	pushes   int
	woken    int // deliveries so far
	finished int // checks finished so far
	webhooks bool
	passNow  func()
	wakeAt   time.Duration // a woken pass is due then; 0: none
}

// timed is a change due at a time into the hour.
type timed struct {
	at time.Duration
	do func()
}

func headSHA(pr, v int) string { return fmt.Sprintf("%020x%020x", pr, v) }

// followHour runs the hour and returns the charged requests after the
// first pass, all requests (304s included), and the deliveries made.
func followHour(b *testing.B, pushes int, webhooks bool) (charged, all, deliveries int) {
	b.Helper()
	ctx := context.Background()
	sim, f := backlogOf(b, 1000)
	first := sim.srv.Counts()
	gap := time.Hour / time.Duration(max(pushes, 1))
	for k := range pushes {
		pr := (k*37)%1000 + 1
		sim.at(time.Duration(k)*gap+gap/2, func() { sim.push(pr) })
	}
	pass := func() {
		if _, err := f.Pass(ctx); err != nil {
			b.Fatal(err)
		}
	}
	sim.webhooks, sim.passNow = webhooks, pass
	if webhooks {
		for reconcile := 15 * time.Minute; reconcile <= time.Hour; reconcile += 15 * time.Minute {
			sim.at(reconcile, pass)
		}
	} else {
		for m := 1; m <= 60; m++ {
			sim.at(time.Duration(m)*time.Minute, pass)
		}
	}
	for len(sim.pending) > 0 && sim.pending[0].at <= time.Hour {
		next := sim.pending[0]
		sim.pending = sim.pending[1:]
		sim.now = next.at
		next.do()
	}
	last := sim.srv.Counts()
	return last.Charged() - first.Charged(), last.Requests - first.Requests, sim.woken
}

// at schedules do at time t, in order of time.
func (s *hourSim) at(t time.Duration, do func()) {
	i := len(s.pending)
	for i > 0 && s.pending[i-1].at > t {
		i--
	}
	s.pending = append(s.pending[:i], append([]timed{{t, do}}, s.pending[i:]...)...)
}

// deliver is a webhook: with webhooks on, it wakes a pass 300 ms later,
// one for the deliveries that come before it.
func (s *hourSim) deliver() {
	s.woken++
	if !s.webhooks || s.wakeAt > s.now {
		return
	}
	s.wakeAt = s.now + 300*time.Millisecond
	s.at(s.wakeAt, s.passNow)
}

// push moves pr's head, its check pending for two minutes: then it
// finishes, one in five failing.
func (s *hourSim) push(pr int) {
	s.version[pr]++
	v := s.version[pr]
	s.srv.SetPRHead("o", "r", pr, headSHA(pr, v))
	s.srv.SetCheckRun("o", "r", headSHA(pr, v), forgetest.CheckRun{Name: "test", Status: "in_progress"})
	s.deliver() // pull_request synchronize
	s.at(s.now+2*time.Minute, func() {
		if s.version[pr] != v {
			return // pushed again since
		}
		s.finished++
		conclusion := "success"
		if s.finished%5 == 0 {
			conclusion = "failure"
		}
		s.srv.SetCheckRun("o", "r", headSHA(pr, v), forgetest.CheckRun{Name: "test", Conclusion: conclusion})
		s.deliver() // check_run completed
	})
}

// Fix is fix-surgeon: a commit, which the host's push pushes.
func (s *hourSim) Fix(context.Context, follow.Item, string, string, follow.Feedback) (follow.Fixed, error) {
	if out, err := exec.Command("git", "-C", s.tree, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q", "--allow-empty", "-m", "fix").CombinedOutput(); err != nil {
		return follow.Fixed{}, fmt.Errorf("%v %s", err, out)
	}
	return follow.Fixed{Result: "SUCCESS", Commit: "c0ffee"}, nil
}

// simHost is GitHub whose pushes are the simulation's.
type simHost struct {
	*app.GitHub
	sim *hourSim
}

func (h simHost) Push(_ context.Context, _, branch string) error {
	var pr int
	fmt.Sscanf(branch, "cadre/%d", &pr)
	h.sim.push(pr)
	return nil
}

// simTrees is one tree for every item; the base never moves.
type simTrees struct{ dir string }

func (t simTrees) Tree(context.Context, follow.Item) (*workspace.Repo, error) {
	return &workspace.Repo{Dir: t.dir}, nil
}
func (simTrees) Remove(context.Context, follow.Item) error { return nil }
func (simTrees) BaseHead(context.Context) (string, error)  { return "base", nil }
func (simTrees) Mergeable(context.Context, string, string, string) (bool, error) {
	return true, nil
}

// backlogOf is n open pull requests of cadre's, green, and a follower
// that has made its first pass over them.
func backlogOf(b *testing.B, n int) (*hourSim, *follow.Follower) {
	b.Helper()
	ctx := context.Background()
	srv := forgetest.New(b, "tok")
	srv.AddRepo("o", "r")
	srv.SetRateLimit(1_000_000, 1_000_000) // the first pass reads them all
	dir := b.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "cadre.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	items := make([]store.Item, n)
	for i := range items {
		items[i] = store.Item{RunID: "r", ID: fmt.Sprint(i + 1), Status: store.ItemCompleted}
	}
	if err := st.CreateRun(ctx, store.Run{ID: "r", Status: store.RunCompleted}, items...); err != nil {
		b.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprint(i + 1)
		num := srv.AddPR("o", "r", forgetest.PR{Title: "p" + id, Head: "cadre/" + id, Base: "main", HeadSHA: headSHA(i+1, 0)})
		srv.SetCheckRun("o", "r", headSHA(i+1, 0), forgetest.CheckRun{Name: "test", Conclusion: "success"})
		rec := store.Step{RunID: "r", ItemID: id, ID: report.PRStepID(id), Kind: report.KindPR}
		if err := st.StartStep(ctx, rec); err != nil {
			b.Fatal(err)
		}
		rec.Status = store.StepCompleted
		rec.Result, _ = json.Marshal(report.PublishRecord{Branch: "cadre/" + id, Number: num})
		if err := st.FinishStep(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	tree := filepath.Join(dir, "tree")
	if out, err := exec.Command("sh", "-c", "git init -q "+tree+" && cd "+tree+" && git -c user.name=b -c user.email=b@x commit -q --allow-empty -m x").CombinedOutput(); err != nil {
		b.Fatalf("%v %s", err, out)
	}
	cfg := config.Default()
	cfg.Repository, cfg.GitHub.APIURL = "o/r", srv.URL
	cfg.Follow.CIFailed.Rounds = 1000
	gh := app.NewGitHub(app.Workspace{Root: dir, Config: cfg}, func(string) string { return "tok" }, forge.WithWriteGap(0))
	sim := &hourSim{srv: srv, tree: tree, version: map[int]int{}}
	f := &follow.Follower{Store: st, Host: simHost{gh, sim}, Steps: sim, Trees: simTrees{tree}, Config: cfg.Follow, Base: "main",
		Pause:   func(context.Context, follow.Item, string) error { return nil },
		Unpause: func(context.Context, follow.Item) error { return nil }}
	if _, err := f.Pass(ctx); err != nil {
		b.Fatal(err)
	}
	return sim, f
}
