package cli_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/forge/forgetest"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/webhook"
)

const hookSecret = "It's a Secret to Everybody"

// listenRepo is a watchRepo whose github: names the webhook secret's
// variable, with issue 1's pull request open.
func listenRepo(t testing.TB, follow string) *githubRepo {
	t.Helper()
	g := watchRepo(t, follow)
	nameHookSecret(t, g.dir, "github")
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	return g
}

// nameHookSecret makes the forge's section of dir's cadre.yaml name
// CADRE_HOOK_SECRET as the webhook secret's variable.
func nameHookSecret(t testing.TB, dir, forge string) {
	t.Helper()
	path := filepath.Join(dir, "cadre.yaml")
	cfg, _ := os.ReadFile(path)
	with := strings.Replace(string(cfg), "watch: {labels: [cadre]}}", "watch: {labels: [cadre]}, webhook_secret_env: CADRE_HOOK_SECRET}", 1)
	if with == string(cfg) {
		t.Fatalf("cadre.yaml has no %s: to add the secret's variable to:\n%s", forge, cfg)
	}
	os.WriteFile(path, []byte(with), 0o644)
}

// startListening starts cadre watch --listen on a free port with args,
// and waits for its first pass; it returns the process and the URL.
func startListening(t *testing.T, g *githubRepo, args ...string) (*cadreProc, string) {
	t.Helper()
	return listenIn(t, g.dir, g.work, "github", args...)
}

// listeningOn matches the line cadre watch --listen says where forge's
// webhooks are received at.
func listeningOn(forge string) *regexp.Regexp {
	return regexp.MustCompile(`listening for ` + forge + ` webhooks at (http://\S+/webhooks/` + forge + `)`)
}

// listenIn starts cadre watch --listen in dir on a free port with args,
// and waits for its first pass; it returns the process and the URL of
// forge's webhooks.
func listenIn(t *testing.T, dir, work, forge string, args ...string) (*cadreProc, string) {
	t.Helper()
	tr := &temporalRepo{dir: dir, work: work, path: os.Getenv("PATH")}
	watch := tr.start(t, "watch", append([]string{"watch", "--listen", "127.0.0.1:0"}, args...)...)
	listening := listeningOn(forge)
	var url string
	waitFor(t, 60*time.Second, "the watch listening and through its first pass", func() bool {
		out, _ := os.ReadFile(watch.log)
		if m := listening.FindSubmatch(out); m != nil {
			url = string(m[1])
		}
		return url != "" && strings.Contains(string(out), "pull request(s) followed")
	})
	return watch, url
}

// postHook sends a check_run delivery as GitHub does, signed with secret.
func postHook(t testing.TB, url, secret, delivery, head string, pr int) int {
	t.Helper()
	body := fmt.Sprintf(`{"action":"completed","check_run":{"id":77,"head_sha":%q,"status":"completed","conclusion":"failure","name":"test",`+
		`"pull_requests":[{"number":%d,"head":{"sha":%q}}]},"repository":{"full_name":"acme/widgets"},"sender":{"login":"github-actions[bot]"}}`, head, pr, head)
	return postSigned(t, url, secret, "check_run", delivery, []byte(body))
}

// A signed check_run webhook wakes a watch whose interval is an hour:
// the failed check is fixed and pushed within seconds, and the delivery
// is in the item's journal. One signed with another secret is answered
// 401 and changes nothing, though the check has failed all along.
func TestWatchListenWebhookWakesPass(t *testing.T) {
	t.Setenv("CADRE_HOOK_SECRET", hookSecret)
	g := listenRepo(t, "")
	const branch = "cadre/1-fix-the-frobnicator"
	pr := g.fake.PRs("acme", "widgets")[0].Number
	watch, url := startListening(t, g, "--interval", "1h")
	before := g.commits(t, branch)
	head := g.rev(t, branch)
	g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{JobID: 77, Name: "test", Conclusion: "failure", Title: "1 test failed"})
	g.fake.SetJobLog("acme", "widgets", 77, "FAIL pkg/b: want more\n")

	if code := postHook(t, url, "not the secret", "bad-1", head, pr); code != http.StatusUnauthorized {
		t.Errorf("a badly signed webhook: %d, want 401", code)
	}
	time.Sleep(3 * time.Second) // a woken pass would have pushed by now
	out, _ := os.ReadFile(watch.log)
	if n := g.commits(t, branch); n != before || strings.Count(string(out), "pull request(s) followed") != 1 || strings.Contains(string(out), "webhook ") {
		t.Fatalf("a badly signed webhook changed something (%d commits, want %d):\n%s", n, before, out)
	}

	sent := time.Now()
	if code := postHook(t, url, hookSecret, "72d3162e-cc78-11e3-81ab-4c9367dc0958", head, pr); code != http.StatusAccepted {
		t.Fatalf("a signed webhook: %d, want 202", code)
	}
	waitFor(t, 60*time.Second, "the fix pushed", func() bool { return g.commits(t, branch) == before+1 })
	t.Logf("webhook to fix pushed: %s", time.Since(sent).Round(time.Millisecond))
	out, _ = os.ReadFile(watch.log)
	if !strings.Contains(string(out), "cadre: watch: webhook check_run completed failure #") {
		t.Errorf("the watch did not say it took the webhook:\n%s", out)
	}
	if code := postHook(t, url, hookSecret, "72d3162e-cc78-11e3-81ab-4c9367dc0958", head, pr); code != http.StatusOK {
		t.Errorf("the same delivery again: %d, want 200", code)
	}
	stopWatching(t, g, watch)
	if !journaled(t, g.dir, "72d3162e") {
		t.Error("the delivery is not in the item's journal")
	}
}

// journaled says whether a webhookReceived event naming delivery is in
// some run's journal.
func journaled(t *testing.T, dir, delivery string) bool {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		events, _, err := st.Events(ctx, r.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if e.Type == "webhookReceived" && strings.Contains(string(e.Data), delivery) {
				return true
			}
		}
	}
	return false
}

// --listen without a secret is refused, exit 2, naming the variable.
func TestWatchListenRefusedWithoutSecret(t *testing.T) {
	g := watchRepo(t, "")
	if code, _, e := g.cadre(t, "", "watch", "--listen", "127.0.0.1:0"); code != 2 || !strings.Contains(e, "github.webhook_secret_env") {
		t.Errorf("no webhook_secret_env: exit %d, want 2 naming it\n%s", code, e)
	}
	path := filepath.Join(g.dir, "cadre.yaml")
	cfg, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(cfg), "watch: {labels: [cadre]}}", "watch: {labels: [cadre]}, webhook_secret_env: CADRE_EMPTY_SECRET}", 1)), 0o644)
	t.Setenv("CADRE_EMPTY_SECRET", "")
	if code, _, e := g.cadre(t, "", "watch", "--listen", "127.0.0.1:0"); code != 2 || !strings.Contains(e, "$CADRE_EMPTY_SECRET") {
		t.Errorf("an empty secret: exit %d, want 2 naming $CADRE_EMPTY_SECRET\n%s", code, e)
	}
	if code, _, e := g.cadre(t, "", "watch", "--listen", "127.0.0.1:0", "--once"); code != 2 {
		t.Errorf("--listen --once: exit %d, want 2\n%s", code, e)
	}
}

// A check re-run on a head the watch saw green moves no update time: the
// webhook naming it makes the woken pass ask again, and the failure is
// answered within seconds, not at the reconcile.
func TestWatchListenRerunFailure(t *testing.T) {
	t.Setenv("CADRE_HOOK_SECRET", hookSecret)
	g := listenRepo(t, "")
	const branch = "cadre/1-fix-the-frobnicator"
	pr := g.fake.PRs("acme", "widgets")[0].Number
	head := g.rev(t, branch)
	id := g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{JobID: 78, Name: "test", Conclusion: "success"})
	watch, url := startListening(t, g, "--interval", "1h")
	before := g.commits(t, branch)
	g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{ID: id, JobID: 78, Name: "test", Conclusion: "failure", Title: "flaky no more"})
	g.fake.SetJobLog("acme", "widgets", 78, "FAIL pkg/c: a race\n")
	if code := postHook(t, url, hookSecret, "0b7a1e52-cc78-11e3-81ab-4c9367dc0958", head, pr); code != http.StatusAccepted {
		t.Fatalf("a signed webhook: %d, want 202", code)
	}
	waitFor(t, 30*time.Second, "the re-run's failure fixed and pushed", func() bool { return g.commits(t, branch) == before+1 })
	stopWatching(t, g, watch)
}

// postBody sends a delivery of kind with body as GitHub does, signed.
func postBody(t testing.TB, url, kind, delivery string, body []byte) int {
	t.Helper()
	return postSigned(t, url, hookSecret, kind, delivery, body)
}

// postSigned sends a delivery of kind with body as GitHub does, signed
// with secret.
func postSigned(t testing.TB, url, secret, kind, delivery string, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", kind)
	req.Header.Set("X-GitHub-Delivery", delivery)
	req.Header.Set("X-Hub-Signature-256", webhook.Sign([]byte(secret), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post the webhook: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A check run's delivery carries its conclusion and output: the woken
// pass acts on them as delivered, asking GitHub for none of the head's
// checks (only the failed job's log, which no delivery carries).
func TestWatchListenActsOnThePayload(t *testing.T) {
	t.Setenv("CADRE_HOOK_SECRET", hookSecret)
	g := listenRepo(t, "")
	const branch = "cadre/1-fix-the-frobnicator"
	head := g.rev(t, branch)
	g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{JobID: 79, Name: "test", Status: "in_progress"})
	watch, url := startListening(t, g, "--interval", "1h")
	before := g.commits(t, branch)
	asked := len(g.fake.Calls())
	g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{JobID: 79, Name: "test", Conclusion: "failure", Title: "1 test failed"})
	g.fake.SetJobLog("acme", "widgets", 79, "FAIL pkg/d: off by one\n")
	if code := postBody(t, url, "check_run", "5e1f4a0c-cc78-11e3-81ab-4c9367dc0958", g.fake.CheckRunHook("acme", "widgets", head, "test", "completed")); code != http.StatusAccepted {
		t.Fatalf("a signed webhook: %d, want 202", code)
	}
	waitFor(t, 30*time.Second, "the failure fixed and pushed", func() bool { return g.commits(t, branch) == before+1 })
	logRead := false
	for _, c := range g.fake.Calls()[asked:] {
		if c.Method == http.MethodGet && (strings.HasSuffix(c.Path, "/check-runs") || strings.HasSuffix(c.Path, "/status")) {
			t.Errorf("asked %s though the delivery told", c.Path)
		}
		logRead = logRead || strings.HasSuffix(c.Path, "/actions/jobs/79/logs")
	}
	if !logRead {
		t.Error("the failed job's log was not read")
	}
	stopWatching(t, g, watch)
}

// An issue labelled for the watch is taken up at the delivery that says
// so, not at the next pass by the clock.
func TestWatchListenIssueLabelled(t *testing.T) {
	t.Setenv("CADRE_HOOK_SECRET", hookSecret)
	g := listenRepo(t, "")
	watch, url := startListening(t, g, "--interval", "1h")
	n := g.fake.AddIssue("acme", "widgets", forgetest.Issue{Title: "Label me", Body: "Do it.", Author: "carol", Labels: []string{"cadre"}})
	body := fmt.Sprintf(`{"action":"labeled","issue":{"number":%d,"title":"Label me","labels":[{"id":1,"name":"cadre"}],"state":"open"},`+
		`"label":{"id":1,"name":"cadre"},"repository":{"full_name":"acme/widgets"},"sender":{"login":"carol"}}`, n)
	if code := postBody(t, url, "issues", "8c2e7f10-cc78-11e3-81ab-4c9367dc0958", []byte(body)); code != http.StatusAccepted {
		t.Fatalf("a signed webhook: %d, want 202", code)
	}
	want := fmt.Sprintf("taking up acme/widgets#%d", n)
	waitFor(t, 60*time.Second, "the labelled issue taken up", func() bool {
		out, _ := os.ReadFile(watch.log)
		return strings.Contains(string(out), want)
	})
	waitFor(t, 60*time.Second, "its pull request opened", func() bool { return len(g.fake.PRs("acme", "widgets")) == 2 })
	stopWatching(t, g, watch)
}

// A review asking for changes is answered at its delivery (the reviews
// asked again, the checks not), and a pull request closed ends its item
// at the delivery that says so.
func TestWatchListenReviewThenClosed(t *testing.T) {
	t.Setenv("CADRE_HOOK_SECRET", hookSecret)
	g := listenRepo(t, "")
	const branch = "cadre/1-fix-the-frobnicator"
	pr := g.fake.PRs("acme", "widgets")[0].Number
	watch, url := startListening(t, g, "--interval", "1h")
	before := g.commits(t, branch)
	rv := g.fake.AddReview("acme", "widgets", pr, forgetest.Review{Author: "rita", Association: "MEMBER", State: "CHANGES_REQUESTED", Body: "Two things."})
	if code := postBody(t, url, "pull_request_review", "31a6b2c4-cc78-11e3-81ab-4c9367dc0958", g.fake.ReviewHook("acme", "widgets", pr, rv, "submitted")); code != http.StatusAccepted {
		t.Fatalf("a signed review webhook: %d, want 202", code)
	}
	waitFor(t, 60*time.Second, "the changes made and pushed", func() bool { return g.commits(t, branch) == before+1 })

	g.fake.SetPRState("acme", "widgets", pr, "closed", false)
	if code := postBody(t, url, "pull_request", "4b7c3d5e-cc78-11e3-81ab-4c9367dc0958", g.fake.PullRequestHook("acme", "widgets", pr, "closed")); code != http.StatusAccepted {
		t.Fatalf("a signed pull_request webhook: %d, want 202", code)
	}
	waitFor(t, 60*time.Second, "the item ended closed", func() bool {
		out, _ := os.ReadFile(watch.log)
		return strings.Contains(string(out), "0 merged, 1 closed")
	})
	stopWatching(t, g, watch)
}

// A person's answer to what the watch waits on is a pass's work at once,
// not at the reconcile: cadre approve wakes a listening watch whose
// interval is an hour, and the reaction it granted runs.
func TestWatchListenApproveWakes(t *testing.T) {
	t.Setenv("CADRE_HOOK_SECRET", hookSecret)
	g := listenRepo(t, "follow: {ci_failed: {rounds: 1}}\n")
	const branch = "cadre/1-fix-the-frobnicator"
	run := runOf(t, g)
	watch, url := startListening(t, g, "--interval", "1h")
	before := g.commits(t, branch)
	for i, job := range []int64{81, 82} {
		head := g.rev(t, branch)
		g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{JobID: job, Name: "test", Conclusion: "failure", Title: "1 test failed"})
		if code := postBody(t, url, "check_run", fmt.Sprint("c0ffee-", job), g.fake.CheckRunHook("acme", "widgets", head, "test", "completed")); code != http.StatusAccepted {
			t.Fatalf("a signed webhook: %d, want 202", code)
		}
		if i == 0 {
			waitFor(t, 60*time.Second, "the first failure fixed and pushed", func() bool { return g.commits(t, branch) == before+1 })
		}
	}
	waitFor(t, 60*time.Second, "the second failure waiting for a human", func() bool { return paused(g.dir, run, "1") })
	if code, _, e := g.cadre(t, "", "approve", run, "1"); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, e)
	}
	waitFor(t, 30*time.Second, "the granted round pushed", func() bool { return g.commits(t, branch) == before+2 })
	stopWatching(t, g, watch)
}

// cadreIn is a repository cadre's commands run in, on either forge.
type cadreIn interface {
	cadre(t testing.TB, crashAt string, args ...string) (int, string, string)
}

// stopWatching stops the watch of g's repository with cadre stop and
// waits for it to end well.
func stopWatching(t *testing.T, g cadreIn, watch *cadreProc) {
	t.Helper()
	if code, _, e := g.cadre(t, "", "stop"); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, e)
	}
	if code := watch.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("watch: exit %d", code)
	}
}

// A round that fails (its fix fails follow.verify) is paused for a person
// within seconds under --listen, though no delivery announces the pass
// that pauses it: a pass where a round failed is followed up at once.
func TestWatchListenFailedRoundPauses(t *testing.T) {
	t.Setenv("CADRE_HOOK_SECRET", hookSecret)
	g := watchRepo(t, "commands: {test: \"test ! -e broken.txt\"}\nfollow: {ci_failed: {rounds: 2}}\n")
	nameHookSecret(t, g.dir, "github")
	g.setScenario(t, surgeon("echo oops > broken.txt", "SUCCESS"))
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	const branch = "cadre/1-fix-the-frobnicator"
	run := runOf(t, g)
	watch, url := startListening(t, g, "--interval", "1h")
	n := g.commits(t, branch)
	head := g.rev(t, branch)
	g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{JobID: 83, Name: "test", Conclusion: "failure", Title: "1 test failed"})
	if code := postBody(t, url, "check_run", "6d2f8a10-cc78-11e3-81ab-4c9367dc0958", g.fake.CheckRunHook("acme", "widgets", head, "test", "completed")); code != http.StatusAccepted {
		t.Fatalf("a signed webhook: %d, want 202", code)
	}
	waitFor(t, 30*time.Second, "the failed round paused for a person", func() bool { return paused(g.dir, run, "1") })
	if g.commits(t, branch) != n {
		t.Error("a fix that fails follow.verify was pushed")
	}
	stopWatching(t, g, watch)
}

// paused says whether item of run in the repository at dir is journaled
// as waiting for a person.
func paused(dir, run, item string) bool {
	st, err := store.Open(context.Background(), filepath.Join(dir, ".cadre", "cadre.db"))
	if err != nil {
		return false
	}
	defer st.Close()
	it, err := st.GetItem(context.Background(), run, item)
	return err == nil && it.Status == store.ItemPaused
}
