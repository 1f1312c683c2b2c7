package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/forge/forgetest"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/webhook"
)

// soakScenario: the executor writes a file of the item's own, and every
// third item a line of shared.txt too, so merges make conflicts; the
// fix-surgeon resolves a conflict about half the time and leaves its
// markers otherwise, claiming SUCCESS either way, and appends to its
// file for a failed check or a review.
const soakScenario = `rules:
  - role: executor
    actions:
      - run: [sh, -c, "n=$(basename $PWD); echo $n > fix-$n.txt; if [ $((n % 3)) = 0 ]; then echo line-$n >> shared.txt; fi"]
    say: Fixed it.
    signal: {result: SUCCESS, confidence: 9}
  - role: fix-surgeon
    actions:
      - run: [sh, -c, "n=$(basename $PWD); if grep -q '^<<<<<<< ' shared.txt 2>/dev/null; then if [ $(($(od -An -N1 -tu1 /dev/urandom) % 2)) = 0 ]; then sed -i -e '/^<<<<<<< /d' -e '/^=======$/d' -e '/^>>>>>>> /d' shared.txt; fi; else echo more >> fix-$n.txt; fi"]
    say: Fixed what was asked.
    signal: {result: SUCCESS, confidence: 9}
`

// soakConfig sizes a soak.
type soakConfig struct {
	prs      int           // pull requests followed to merge
	limit    time.Duration // how long they may take, watch kills included
	killsFor time.Duration // how long the watch is SIGKILLed now and then
	seed     uint64
	// hooks makes the watch listen (--interval 1h): CI, reviewers and
	// merges are delivered to it as GitHub's webhooks, lost while it is
	// down, and nothing but them, its start and cadre approve make a pass.
	hooks bool
}

// soakResult is what a soak saw.
type soakResult struct {
	wrong []string // writes that should not have happened
	// unmerged says which pull requests did not merge in time, and where
	// each stands.
	unmerged string
	merged   int
	requests int // to GitHub, all of them
	passes   int // of the watch that looked at GitHub, over all its processes
	kills    int
	kinds    string // the charged requests by kind, most first
}

// requestKinds counts the charged calls by method and path shape.
func requestKinds(calls []forgetest.Call) string {
	digits := regexp.MustCompile(`/[0-9a-f]{40}|/\d+`)
	n := map[string]int{}
	for _, c := range calls {
		if c.Status != 304 && !strings.HasPrefix(c.Path, "/_download") {
			n[c.Method+" "+digits.ReplaceAllString(c.Path, "/N")]++
		}
	}
	var kinds []string
	for k := range n {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int { return n[b] - n[a] })
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "%6d %s\n", n[k], k)
	}
	return b.String()
}

// soak follows cfg.prs pull requests to merge under cadre watch, which a
// killer SIGKILLs at random, against a GitHub whose CI queues checks and
// completes them later (some failing, some logs unreadable), whose
// reviewers ask for changes and approve (some approvals of an earlier
// commit), whose base requires two checks, and whose merges move the
// base under the others. A person approves whatever waits for one. It
// reports every wrong write it finds: a conflict marker pushed, a merge
// of a head not verified, a write made twice.
func soak(t testing.TB, cfg soakConfig) soakResult {
	rng := rand.New(rand.NewPCG(cfg.seed, 7))
	g := watchRepo(t, "follow: {merge: squash, ci_failed: {rounds: 3}, changes_requested: {rounds: 3}, conflict: {rounds: 3}}\n")
	if cfg.hooks {
		nameHookSecret(t, g.dir, "github")
		t.Setenv("CADRE_HOOK_SECRET", hookSecret)
	}
	g.setScenario(t, soakScenario)
	// Passes a second apart spend in minutes what a real watch spends in
	// hours: the quota is counted (Charged), not enforced.
	g.fake.SetRateLimit(1<<30, 1<<30)
	g.fake.Protect("acme", "widgets", "main", forgetest.Protection{Contexts: []string{"test"}, Rules: []string{"lint"}})
	var targets []string
	for i := 3; i <= cfg.prs; i++ {
		g.fake.AddIssue("acme", "widgets", forgetest.Issue{Title: fmt.Sprintf("Task %d", i), Body: "Do it.", Author: "carol"})
	}
	for i := 1; i <= cfg.prs; i++ {
		targets = append(targets, strconv.Itoa(i))
	}
	if code, out, errOut := g.cadre(t, "", append([]string{"run", "--parallel", "4"}, targets...)...); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	if n := len(g.fake.PRs("acme", "widgets")); n != cfg.prs {
		t.Fatalf("%d pull requests opened, want %d", n, cfg.prs)
	}
	run := runOf(t, g)

	w := &soakWorld{g: g, rng: rng, heads: map[int]*ciHead{}, reviewer: map[int]*reviewState{}, closed: map[int]bool{}}
	args := []string{"--interval", "1s"}
	if cfg.hooks {
		addr := freeAddr(t)
		w.hookURL = "http://" + addr + "/webhooks/github"
		args = []string{"--listen", addr, "--interval", "1h"}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); w.ci(stop) }()
	go func() { defer wg.Done(); w.human(stop, run) }()

	logPath := filepath.Join(g.work, "soak-watch.log")
	start, res := time.Now(), soakResult{}
	for time.Since(start) < cfg.limit && w.merged() < cfg.prs {
		p := startWatch(t, g, logPath, args...)
		if time.Since(start) < cfg.killsFor {
			time.Sleep(time.Duration(200+rng.IntN(1800)) * time.Millisecond)
			p.Process.Signal(syscall.SIGKILL)
			res.kills++
		} else {
			for time.Since(start) < cfg.limit && w.merged() < cfg.prs {
				time.Sleep(100 * time.Millisecond)
			}
			p.Process.Signal(syscall.SIGTERM)
		}
		p.Wait()
	}
	close(stop)
	wg.Wait()
	res.merged = w.merged()
	res.requests = g.fake.Counts().Charged()
	res.kinds = requestKinds(g.fake.Calls())
	log, _ := os.ReadFile(logPath)
	for _, c := range g.fake.Calls() {
		if c.Method == "GET" && strings.HasSuffix(c.Path, "/pulls") {
			res.passes++ // each pass lists the pull requests once
		}
	}
	res.wrong = w.audit(t)
	if res.merged < cfg.prs {
		_, status, _ := g.cadre(t, "", "status")
		res.unmerged = fmt.Sprintf("%d of %d pull requests merged within %s:\n%s\n%s\n%s", res.merged, cfg.prs, cfg.limit, status, w.where(), tail(string(log), 80))
	}
	return res
}

// where says of each open pull request where its branch stands: origin's
// head and base, whether the base is in the head, and the item's tree.
func (w *soakWorld) where() string {
	g := w.g
	rev := func(dir string, args ...string) string {
		out, _ := exec.Command("git", append([]string{"-C", dir, "rev-parse", "--short=12"}, args...)...).Output()
		return strings.TrimSpace(string(out))
	}
	var b strings.Builder
	for _, p := range g.fake.PRs("acme", "widgets") {
		if p.State != "open" {
			continue
		}
		in := exec.Command("git", "-C", g.bare, "merge-base", "--is-ancestor", "main", p.Head).Run() == nil
		item := strings.SplitN(strings.TrimPrefix(p.Head, "cadre/"), "-", 2)[0]
		tree := filepath.Join(g.dir, ".cadre", "worktrees", item)
		fmt.Fprintf(&b, "#%d %s: origin %s, main %s (in it: %v); tree %s on %s\n", p.Number, p.Head,
			rev(g.bare, p.Head), rev(g.bare, "main"), in, rev(tree, "HEAD"), rev(tree, "--abbrev-ref", "HEAD"))
	}
	return b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// startWatch starts cadre watch in the background, its output appended
// to logPath.
func startWatch(t testing.TB, g *githubRepo, logPath string, args ...string) *exec.Cmd {
	t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := exec.Command("cadre", append([]string{"watch", "--plain"}, args...)...)
	c.Dir, c.Env = g.dir, append(os.Environ(), "GITHUB_TOKEN="+canary)
	c.Stdout, c.Stderr = f, f
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// soakWorld is the CI, the reviewers and the person of a soak.
type soakWorld struct {
	g        *githubRepo
	mu       sync.Mutex
	rng      *rand.Rand
	heads    map[int]*ciHead // by pull request: its head as CI last saw it
	reviewer map[int]*reviewState
	jobs     int64
	// hookURL is where a listening watch takes GitHub's deliveries ("":
	// it polls); closed holds the pull requests whose close was
	// delivered, base the base's commit last delivered.
	hookURL    string
	deliveries int
	closed     map[int]bool
	base       string
}

// freeAddr is a loopback address no one listens at now: the watch's,
// kept across its restarts.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// deliver posts a delivery of kind to the listening watch, as GitHub
// does: signed, once; lost when the watch is down.
func (w *soakWorld) deliver(kind string, body []byte) {
	if w.hookURL == "" {
		return
	}
	w.deliveries++
	req, _ := http.NewRequest(http.MethodPost, w.hookURL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", kind)
	req.Header.Set("X-GitHub-Delivery", fmt.Sprint("soak-", w.deliveries))
	req.Header.Set("X-Hub-Signature-256", webhook.Sign([]byte(hookSecret), body))
	c := http.Client{Timeout: 5 * time.Second}
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
	}
}

// ciHead is CI's work on one head: queued, running, done.
type ciHead struct {
	sha   string
	job   int64 // the "test" job's id
	since time.Time
	stage int // 0 queued, 1 in progress, 2 test done, 3 lint done
	fail  bool
}

type reviewState struct {
	stage     int    // 0 new, 1 changes asked, 2 approved
	asked     string // the head changes were asked of
	approved  string // the head last approved
	heads     []string
	staleDone bool
}

func (w *soakWorld) merged() int {
	n := 0
	for _, p := range w.g.fake.PRs("acme", "widgets") {
		if p.Merged {
			n++
		}
	}
	return n
}

func (w *soakWorld) rand(n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rng.IntN(n)
}

// ci runs checks on every open pull request's head: "test" as an
// Actions job (queued, then in progress, then completed; a third fail,
// their log sometimes unreadable) and "lint" as a commit status that
// comes later (a check appearing after the others).
func (w *soakWorld) ci(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		if out, err := exec.Command("git", "-C", w.g.bare, "rev-parse", "refs/heads/main").Output(); err == nil {
			if base := strings.TrimSpace(string(out)); base != w.base {
				if w.base != "" {
					w.deliver("push", w.g.fake.PushHook("acme", "widgets", "main", w.base, base))
				}
				w.base = base
			}
		}
		for _, p := range w.g.fake.PRs("acme", "widgets") {
			if p.State != "open" {
				if !w.closed[p.Number] {
					w.closed[p.Number] = true
					w.deliver("pull_request", w.g.fake.PullRequestHook("acme", "widgets", p.Number, "closed"))
				}
				continue
			}
			out, err := exec.Command("git", "-C", w.g.bare, "rev-parse", "refs/heads/"+p.Head).Output()
			if err != nil {
				continue
			}
			sha := strings.TrimSpace(string(out))
			h := w.heads[p.Number]
			if h == nil || h.sha != sha {
				if h != nil {
					w.deliver("pull_request", w.g.fake.PullRequestHook("acme", "widgets", p.Number, "synchronize"))
				}
				w.jobs++
				h = &ciHead{sha: sha, job: 1000 + w.jobs, since: time.Now(), fail: w.rand(3) == 0}
				w.heads[p.Number] = h
				w.g.fake.SetCheckRun("acme", "widgets", sha, forgetest.CheckRun{JobID: h.job, Name: "test", Status: "queued"})
				w.deliver("check_run", w.g.fake.CheckRunHook("acme", "widgets", sha, "test", "created"))
			}
			w.advance(p.Number, h)
			w.review(p.Number, sha)
		}
	}
}

func (w *soakWorld) advance(pr int, h *ciHead) {
	age, job := time.Since(h.since), h.job
	switch {
	case h.stage == 0 && age > 300*time.Millisecond:
		w.g.fake.SetCheckRun("acme", "widgets", h.sha, forgetest.CheckRun{JobID: job, Name: "test", Status: "in_progress"})
		h.stage = 1
	case h.stage == 1 && age > 800*time.Millisecond:
		conclusion := "success"
		if h.fail {
			conclusion = "failure"
			if w.rand(2) == 0 {
				w.g.fake.SetJobLog("acme", "widgets", job, "ok a\nFAIL b: want more\n")
			}
		}
		w.g.fake.SetCheckRun("acme", "widgets", h.sha, forgetest.CheckRun{JobID: job, Name: "test", Conclusion: conclusion, Title: conclusion})
		w.deliver("check_run", w.g.fake.CheckRunHook("acme", "widgets", h.sha, "test", "completed"))
		h.stage = 2
	case h.stage == 2 && age > 1500*time.Millisecond:
		w.g.fake.SetStatus("acme", "widgets", h.sha, forgetest.Status{Context: "lint", State: "success"})
		w.deliver("status", w.g.fake.StatusHook("acme", "widgets", h.sha, "lint"))
		h.stage = 3
	}
}

// review is the reviewers of pull request pr at head sha: once its
// checks are green, half the pull requests get a change request with a
// comment first; then an approval, a third of them of an earlier commit
// first.
func (w *soakWorld) review(pr int, sha string) {
	r := w.reviewer[pr]
	if r == nil {
		r = &reviewState{}
		w.reviewer[pr] = r
	}
	if len(r.heads) == 0 || r.heads[len(r.heads)-1] != sha {
		r.heads = append(r.heads, sha)
	}
	if h := w.heads[pr]; h == nil || h.sha != sha || h.stage < 3 || h.fail {
		return
	}
	switch {
	case r.stage == 0 && w.rand(2) == 0:
		id := w.g.fake.AddReview("acme", "widgets", pr, forgetest.Review{Author: "rita", Association: "MEMBER", State: "CHANGES_REQUESTED", Body: "Say more."})
		w.g.fake.AddReviewComment("acme", "widgets", pr, forgetest.ReviewComment{ReviewID: id, Author: "rita", Association: "MEMBER", Path: "README", Line: 1, Body: "Why?"})
		w.deliver("pull_request_review", w.g.fake.ReviewHook("acme", "widgets", pr, id, "submitted"))
		r.stage, r.asked = 1, sha
	case r.stage == 0 || r.stage == 1 && sha != r.asked || r.stage == 2 && sha != r.approved:
		if !r.staleDone && len(r.heads) > 1 && w.rand(3) == 0 {
			// An approval of the commit before: it must not merge this one.
			id := w.g.fake.AddReview("acme", "widgets", pr, forgetest.Review{Author: "rita", Association: "MEMBER", State: "APPROVED", CommitID: r.heads[len(r.heads)-2]})
			w.deliver("pull_request_review", w.g.fake.ReviewHook("acme", "widgets", pr, id, "submitted"))
			r.staleDone = true
			return
		}
		id := w.g.fake.AddReview("acme", "widgets", pr, forgetest.Review{Author: "rita", Association: "MEMBER", State: "APPROVED", CommitID: sha})
		w.deliver("pull_request_review", w.g.fake.ReviewHook("acme", "widgets", pr, id, "submitted"))
		r.stage, r.approved = 2, sha
	}
}

// human approves, every few seconds, whatever waits for a person, as
// the journal says (cadre status would ask GitHub, which the soak counts).
func (w *soakWorld) human(stop <-chan struct{}, run string) {
	for {
		select {
		case <-stop:
			return
		case <-time.After(2 * time.Second):
		}
		st, err := store.Open(context.Background(), filepath.Join(w.g.dir, ".cadre", "cadre.db"))
		if err != nil {
			continue
		}
		items, _ := st.Items(context.Background(), run)
		st.Close()
		for _, it := range items {
			if it.Status == store.ItemPaused {
				a := exec.Command("cadre", "approve", run, it.ID, "--note", "Try once more.")
				a.Dir, a.Env = w.g.dir, append(os.Environ(), "GITHUB_TOKEN="+canary)
				a.Run()
			}
		}
	}
}

// markerRE finds a conflict marker line in git grep's output.
var markerRE = regexp.MustCompile(`(?m)^(<<<<<<< |>>>>>>> )`)

// audit lists the wrong writes: a pushed commit holding a conflict
// marker; a merge of a head without every check finished and passed,
// both required ones among them, or without an approval of that commit;
// a reply, marked comment or step commit made twice.
func (w *soakWorld) audit(t testing.TB) []string {
	g := w.g
	var wrong []string
	pushes, _ := os.ReadFile(filepath.Join(g.work, "pushes.log"))
	for _, line := range strings.Split(string(pushes), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || !strings.HasPrefix(f[2], "refs/heads/cadre/") || strings.Trim(f[1], "0") == "" {
			continue
		}
		out, _ := exec.Command("git", "-C", g.bare, "grep", "-h", "-E", "^(<<<<<<<|>>>>>>>) ", f[1], "--").Output()
		if markerRE.Match(out) {
			wrong = append(wrong, fmt.Sprintf("%s pushed with conflict markers as %.12s", f[2], f[1]))
		}
	}
	for _, p := range g.fake.PRs("acme", "widgets") {
		if !p.Merged {
			continue
		}
		runs, sts := g.fake.CheckRuns("acme", "widgets", p.HeadSHA), g.fake.Statuses("acme", "widgets", p.HeadSHA)
		passed := map[string]bool{}
		for _, cr := range runs {
			passed[cr.Name] = cr.Status == "completed" && cr.Conclusion == "success"
		}
		for _, st := range sts {
			passed[st.Context] = st.State == "success"
		}
		for _, name := range []string{"test", "lint"} {
			if !passed[name] {
				wrong = append(wrong, fmt.Sprintf("#%d merged at %.12s without %s passed", p.Number, p.HeadSHA, name))
			}
		}
		approved := slices.ContainsFunc(g.fake.Reviews("acme", "widgets", p.Number), func(r forgetest.Review) bool {
			return r.State == "APPROVED" && r.CommitID == p.HeadSHA
		})
		if !approved {
			wrong = append(wrong, fmt.Sprintf("#%d merged at %.12s, which nobody approved", p.Number, p.HeadSHA))
		}
		replies := map[int64]int{}
		for _, c := range g.fake.ReviewComments("acme", "widgets", p.Number) {
			if c.InReplyTo != 0 {
				replies[c.InReplyTo]++
			}
		}
		for id, n := range replies {
			if n > 1 {
				wrong = append(wrong, fmt.Sprintf("#%d: comment %d answered %d times", p.Number, id, n))
			}
		}
		markers := map[string]int{}
		for _, c := range g.fake.Comments("acme", "widgets", p.Number) {
			for _, m := range regexp.MustCompile(`<!-- (cadre:[^ ]+) -->`).FindAllStringSubmatch(c.Body, -1) {
				markers[m[1]]++
			}
		}
		for m, n := range markers {
			if n > 1 {
				wrong = append(wrong, fmt.Sprintf("#%d: comment %s posted %d times", p.Number, m, n))
			}
		}
	}
	out, _ := exec.Command("git", "-C", g.bare, "log", "--all", "--format=%(trailers:key=Cadre-Step,valueonly)").Output()
	steps := map[string]int{}
	for _, s := range strings.Fields(string(out)) {
		steps[s]++
	}
	for s, n := range steps {
		if n > 1 {
			wrong = append(wrong, fmt.Sprintf("step %s committed %d times", s, n))
		}
	}
	merges := map[string]int{}
	for _, c := range g.fake.Calls() {
		if strings.HasSuffix(c.Path, "/merge") && c.Method == "PUT" && c.Status == 200 {
			merges[c.Path]++
		}
	}
	for path, n := range merges {
		if n > 1 {
			wrong = append(wrong, fmt.Sprintf("%s merged %d times", path, n))
		}
	}
	return wrong
}

// soakSeed is $CADRE_SOAK_SEED, else a new seed: said, to be repeated.
func soakSeed(t testing.TB) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("CADRE_SOAK_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (CADRE_SOAK_SEED repeats it)", seed)
	return seed
}

// A dozen pull requests followed to merge while the watch is SIGKILLed at
// random: no conflict marker is ever pushed, no head merged that was not
// green and approved at that commit, no write made twice.
func TestWatchSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak takes a few minutes")
	}
	seed := soakSeed(t)
	res := soak(t, soakConfig{prs: 12, limit: 5 * time.Minute, killsFor: 30 * time.Second, seed: seed})
	for _, w := range res.wrong {
		t.Error(w)
	}
	if res.unmerged != "" {
		t.Error(res.unmerged)
	}
	t.Logf("%d merged, %d watch kills, %d passes, %d charged requests:\n%s", res.merged, res.kills, res.passes, res.requests, res.kinds)
	if res.kills == 0 {
		t.Error("the watch was never killed")
	}
}

// The soak with the watch listening and its interval an hour: what CI,
// the reviewers and the merges do reaches it only as deliveries (those
// sent while it is killed are lost), and the same holds: every pull
// request merged, none wrongly.
func TestWatchSoakWebhooks(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak takes a few minutes")
	}
	seed := soakSeed(t)
	res := soak(t, soakConfig{prs: 12, limit: 5 * time.Minute, killsFor: 5 * time.Second, seed: seed, hooks: true})
	for _, w := range res.wrong {
		t.Error(w)
	}
	if res.unmerged != "" {
		t.Error(res.unmerged)
	}
	t.Logf("%d merged, %d watch kills, %d lists of the pull requests, %d charged requests:\n%s", res.merged, res.kills, res.passes, res.requests, res.kinds)
	if res.kills == 0 {
		t.Error("the watch was never killed")
	}
}

// BenchmarkWatchSoak is the soak's longer form: it reports the wrong
// writes (target 0) and the requests a pull request costs an hour at the
// default poll interval (60s), from the requests per pass seen.
//
//	go test -run '^$' -bench WatchSoak -benchtime 1x ./internal/cli/
func BenchmarkWatchSoak(b *testing.B) {
	for b.Loop() {
		seed := soakSeed(b)
		res := soak(b, soakConfig{prs: 30, limit: 15 * time.Minute, killsFor: 5 * time.Minute, seed: seed})
		report := strings.Join(append(res.wrong, res.unmerged), "\n")
		path := filepath.Join(os.TempDir(), "cadre-soak.txt")
		if err := os.WriteFile(path, []byte(report), 0o644); err == nil && strings.TrimSpace(report) != "" {
			b.Logf("what went wrong: %s", path)
		}
		b.ReportMetric(float64(len(res.wrong)), "wrong-writes")
		b.ReportMetric(float64(30-res.merged), "unmerged")
		if res.passes > 0 {
			b.ReportMetric(float64(res.requests)/float64(res.passes)/30*60, "requests/PR-hour")
		}
		b.ReportMetric(float64(res.kills), "kills")
	}
}
