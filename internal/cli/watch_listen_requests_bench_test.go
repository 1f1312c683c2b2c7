package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
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
	"github.com/cadre-dev/cadre/internal/webhook"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// BenchmarkWebhookRequests follows 1,000 open pull requests for an hour
// against the fake GitHub, twice: polling (a pass every 60 s) and with
// webhooks (a pass woken by the deliveries, and a reconcile pass every
// 30 min). In the hour, pushes come evenly spread; each push's check
// starts at once and finishes two minutes later, one in five failing (and
// fixed by cadre, whose push is one more). A push is a pull_request
// delivery, a check's start and end each a check_run one: signed bodies
// shaped as GitHub's, through the webhook handler. It reports the
// requests charged to the rate limit in each mode (a revalidated answer,
// 304, is not), the webhooks' as a share of polling's, and all requests
// made:
//
//	go test ./internal/cli -run '^$' -bench WebhookRequests -benchtime 1x
func BenchmarkWebhookRequests(b *testing.B) {
	for _, pushes := range []int{0, 6, 30, 300} {
		b.Run(fmt.Sprintf("pushes=%d/h", pushes), func(b *testing.B) {
			for range b.N {
				poll := followHour(b, pushes, false)
				hooks := followHour(b, pushes, true)
				if hooks.fixes != poll.fixes {
					b.Fatalf("%d failures fixed with webhooks, %d polling: both must do the same work", hooks.fixes, poll.fixes)
				}
				b.ReportMetric(float64(poll.charged), "charged/h-polling")
				b.ReportMetric(float64(hooks.charged), "charged/h-webhooks")
				b.ReportMetric(float64(poll.all), "requests/h-polling")
				b.ReportMetric(float64(hooks.all), "requests/h-webhooks")
				b.ReportMetric(float64(hooks.deliveries), "deliveries/h")
				b.ReportMetric(float64(hooks.fixes), "fixes/h")
				b.ReportMetric(100*float64(hooks.charged)/float64(max(poll.charged, 1)), "%-of-polling")
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
	fixes    int
	webhooks bool
	wakeAt   time.Duration // a woken pass is due then; 0: none
	f        *follow.Follower
	gh       *app.GitHub
	hooks    *webhook.Handler
	queue    []webhook.Event // delivered since the last pass
}

// timed is a change due at a time into the hour.
type timed struct {
	at time.Duration
	do func()
}

func headSHA(pr, v int) string { return fmt.Sprintf("%020x%020x", pr, v) }

// hourCount is what an hour cost and did.
type hourCount struct {
	charged, all int // requests charged to the rate limit; all, 304s included
	deliveries   int
	fixes        int // failed checks fixed and pushed
}

// followHour runs the hour and counts it, from after the first passes.
func followHour(b *testing.B, pushes int, webhooks bool) hourCount {
	b.Helper()
	sim, f := backlogOf(b, 1000)
	first := sim.srv.Counts()
	gap := time.Hour / time.Duration(max(pushes, 1))
	for k := range pushes {
		pr := (k*37)%1000 + 1
		sim.at(time.Duration(k)*gap+gap/2, func() { sim.push(b, pr) })
	}
	sim.webhooks = webhooks
	if webhooks {
		for reconcile := listenReconcile; reconcile <= time.Hour; reconcile += listenReconcile {
			sim.at(reconcile, func() { sim.pass(b, f.Pass) })
		}
	} else {
		for m := 1; m <= 60; m++ {
			sim.at(time.Duration(m)*time.Minute, func() { sim.pass(b, f.Pass) })
		}
	}
	for len(sim.pending) > 0 && sim.pending[0].at <= time.Hour {
		next := sim.pending[0]
		sim.pending = sim.pending[1:]
		sim.now = next.at
		next.do()
	}
	last := sim.srv.Counts()
	return hourCount{charged: last.Charged() - first.Charged(), all: last.Requests - first.Requests, deliveries: sim.woken, fixes: sim.fixes}
}

// at schedules do at time t, in order of time.
func (s *hourSim) at(t time.Duration, do func()) {
	i := len(s.pending)
	for i > 0 && s.pending[i-1].at > t {
		i--
	}
	s.pending = append(s.pending[:i], append([]timed{{t, do}}, s.pending[i:]...)...)
}

// pass takes in what was delivered since the last pass, as cadre watch
// does, and makes it.
func (s *hourSim) pass(b *testing.B, pass func(context.Context) (follow.Tally, error)) {
	s.f.Apply(s.gh.Facts(s.queue))
	s.queue = nil
	if _, err := pass(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// deliver is a webhook of kind: with webhooks on, it goes through the
// handler, and wakes a pass 300 ms later, one for the deliveries that
// come before it.
func (s *hourSim) deliver(b *testing.B, kind string, body []byte) {
	s.woken++
	if !s.webhooks {
		return
	}
	req := httptest.NewRequest("POST", webhook.Path(webhook.GitHub), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", kind)
	req.Header.Set("X-GitHub-Delivery", fmt.Sprint("d", s.woken))
	req.Header.Set("X-Hub-Signature-256", webhook.Sign(benchSecret, body))
	w := httptest.NewRecorder()
	s.hooks.ServeHTTP(w, req)
	if w.Code != 202 {
		b.Fatalf("delivery %s: %d %s", kind, w.Code, w.Body)
	}
	if s.wakeAt > s.now {
		return
	}
	s.wakeAt = s.now + 300*time.Millisecond
	s.at(s.wakeAt, func() { s.pass(b, s.f.Woken) })
}

var benchSecret = []byte("s3cret")

// listenReconcile is the time between cadre watch --listen's passes by
// the clock, by default.
const listenReconcile = 30 * time.Minute

// push moves pr's head, its check running for two minutes: then it
// finishes, one in five failing.
func (s *hourSim) push(b *testing.B, pr int) {
	s.version[pr]++
	v := s.version[pr]
	sha := headSHA(pr, v)
	s.srv.SetPRHead("o", "r", pr, sha)
	s.deliver(b, "pull_request", s.srv.PullRequestHook("o", "r", pr, "synchronize"))
	s.srv.SetCheckRun("o", "r", sha, forgetest.CheckRun{Name: "test", Status: "in_progress"})
	s.deliver(b, "check_run", s.srv.CheckRunHook("o", "r", sha, "test", "created"))
	s.at(s.now+2*time.Minute, func() {
		if s.version[pr] != v {
			return // pushed again since
		}
		s.finished++
		conclusion := "success"
		if s.finished%5 == 0 {
			conclusion = "failure"
		}
		s.srv.SetCheckRun("o", "r", sha, forgetest.CheckRun{Name: "test", Conclusion: conclusion})
		s.deliver(b, "check_run", s.srv.CheckRunHook("o", "r", sha, "test", "completed"))
	})
}

// Fix is fix-surgeon: a commit, which the host's push pushes.
func (s *hourSim) Fix(context.Context, follow.Item, string, string, follow.Feedback) (follow.Fixed, error) {
	s.fixes++
	if out, err := exec.Command("git", "-C", s.tree, "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-q", "--allow-empty", "-m", "fix").CombinedOutput(); err != nil {
		return follow.Fixed{}, fmt.Errorf("%v %s", err, out)
	}
	return follow.Fixed{Result: "SUCCESS", Commit: "c0ffee"}, nil
}

// simHost is GitHub whose pushes are the simulation's.
type simHost struct {
	*app.GitHub
	sim *hourSim
	b   *testing.B
}

func (h simHost) Push(_ context.Context, _, branch string) error {
	var pr int
	fmt.Sscanf(branch, "cadre/%d", &pr)
	h.sim.push(h.b, pr)
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
// that has made its first passes over them.
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
	sim := &hourSim{srv: srv, tree: tree, version: map[int]int{}, gh: gh}
	hooks, err := webhook.New(webhook.Options{Forge: webhook.GitHub, Secret: benchSecret, Base: "main", Repo: "o/r", Rate: 1e9, Burst: 1e9,
		OnEvent: func(e webhook.Event) { sim.queue = append(sim.queue, e) }})
	if err != nil {
		b.Fatal(err)
	}
	sim.hooks = hooks
	f := &follow.Follower{Store: st, Host: simHost{gh, sim, b}, Steps: sim, Trees: simTrees{tree}, Config: cfg.Follow, Base: "main",
		Trust:   listenReconcile, // as cadre watch --listen sets it
		Pause:   func(context.Context, follow.Item, string) error { return nil },
		Unpause: func(context.Context, follow.Item) error { return nil }}
	sim.f = f
	// The first pass lists the open pull requests, the second those
	// updated since: the hour measured is the steady state after them.
	for range 2 {
		if _, err := f.Pass(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return sim, f
}
