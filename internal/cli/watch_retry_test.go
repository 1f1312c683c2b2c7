package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/store"
)

// retryAgent reports FAIL until the file OK exists, then does its work.
const retryAgent = `#!/bin/sh
cat >/dev/null
if [ ! -f OK ]; then
	printf '### SIGNAL BLOCK\n- Agent: executor\n- Result: FAIL\n- Loop Summary: blocked\n- Confidence: 9\n- Next: Done\n'
	exit 0
fi
echo fixed > fix.txt
printf 'Fixed it.\n\n### SIGNAL BLOCK\n- Agent: executor\n- Result: SUCCESS\n- Loop Summary: fixed\n- Confidence: 9\n- Next: Done\n'
`

// failedIssue is a githubRepo whose issue 1 was run and failed: its
// agent reports FAIL until the test writes the file ok in g.work.
func failedIssue(t *testing.T) (*githubRepo, string) {
	t.Helper()
	g := newGitHubRepo(t)
	g.fake.SetGitDir("acme", "widgets", g.bare)
	os.WriteFile(filepath.Join(g.dir, "agent.sh"), []byte(strings.Replace(retryAgent, "OK", filepath.Join(g.work, "ok"), 1)), 0o755)
	os.WriteFile(filepath.Join(g.dir, "cadre.yaml"), []byte("repository: acme/widgets\ngithub: {api_url: \""+g.fake.URL+"\"}\n"+
		"sandbox: {mode: none}\ndefaults: {runner: agent, workflow: simple}\nrunners:\n  agent: {type: exec, command: ./agent.sh}\n"), 0o644)
	for _, args := range [][]string{{"add", "agent.sh", "cadre.yaml"}, {"-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "agent"}, {"push", "-q", "origin", "main"}} {
		if out, err := exec.Command("git", append([]string{"-C", g.dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if code, out, errOut := g.cadre(t, "", "run", "--plain", "1"); code != 1 || !strings.Contains(errOut, "executor reported FAIL: blocked") {
		t.Fatalf("run: exit %d, want 1 with the executor's FAIL\n%s\n%s", code, errOut, out)
	}
	return g, runOf(t, g)
}

// itemOf reads item 1 of run from the journal, with its retry steps.
func itemOf(t *testing.T, g *githubRepo, run string) (store.Item, []store.Step) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(g.dir, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	it, err := st.GetItem(ctx, run, "1")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := st.ItemSteps(ctx, run, "1")
	if err != nil {
		t.Fatal(err)
	}
	var retries []store.Step
	for _, s := range steps {
		if s.Kind == "retry" {
			retries = append(retries, s)
		}
	}
	return it, retries
}

// cadre retry while another run holds the repository is refused (exit 2)
// and changes nothing: the item stays failed, no retry is journaled, and
// a retry once the repository is free goes on from there.
func TestRetryRefusedChangesNothing(t *testing.T) {
	g, run := failedIssue(t)
	lock := filepath.Join(g.dir, ".git", "cadre.lock")
	// This test's process stands for the live run holding the lock.
	held, _ := json.Marshal(map[string]any{"run": "20990101-000000-live", "pid": os.Getpid(), "state": filepath.Join(g.dir, ".cadre")})
	if err := os.WriteFile(lock, held, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := g.cadre(t, "", "retry", "--plain", "1")
	if code != 2 || !strings.Contains(errOut, "run 20990101-000000-live (pid "+strconv.Itoa(os.Getpid())+") holds") {
		t.Fatalf("retry under another run's lock: exit %d, want 2 naming the run\n%s", code, errOut)
	}
	if it, retries := itemOf(t, g, run); it.Status != store.ItemFailed || len(retries) != 0 {
		t.Fatalf("the refused retry changed the item: %s, retries %+v", it.Status, retries)
	}
	os.Remove(lock)
	os.WriteFile(filepath.Join(g.work, "ok"), nil, 0o644)
	if code, out, errOut := g.cadre(t, "", "retry", "--plain", "1"); code != 0 {
		t.Fatalf("retry: exit %d\n%s\n%s", code, errOut, out)
	}
	if it, retries := itemOf(t, g, run); it.Status == store.ItemFailed || len(retries) != 1 || retries[0].Status != store.StepCompleted {
		t.Errorf("after the retry the item is %s, retries %+v", it.Status, retries)
	}
}

// cadre retry while cadre watch holds the repository is handed to the
// watch (exit 0): journaled as asked, the item left as it is, and taken
// up once at the watch's next pass, which resumes the run as cadre retry
// would: the executor whose FAIL ended the item is asked again.
func TestRetryHandedToWatch(t *testing.T) {
	g, run := failedIssue(t)
	tr := &temporalRepo{dir: g.dir, work: g.work, path: os.Getenv("PATH")}
	watch := tr.start(t, "watch", "watch", "--plain", "--interval", "2s")
	lock := filepath.Join(g.dir, ".git", "cadre.lock")
	waitFor(t, 30*time.Second, "the watch holding the repository", func() bool {
		data, err := os.ReadFile(lock)
		return err == nil && strings.Contains(string(data), `"run":"watch"`)
	})
	os.WriteFile(filepath.Join(g.work, "ok"), nil, 0o644)
	code, _, errOut := g.cadre(t, "", "retry", "--plain", "1")
	if code != 0 || !strings.Contains(errOut, "holds the repository: it retries 1 of run "+run+" at its next pass") {
		t.Fatalf("retry under the watch: exit %d, want 0 saying the watch takes it up\n%s", code, errOut)
	}
	// Asked again before the watch took it up: nothing more is asked.
	// (Or the watch has taken it up already: the item is failed no more.)
	if code, _, errOut := g.cadre(t, "", "retry", "--plain", "1"); !(code == 0 && strings.Contains(errOut, "is asked already")) &&
		!(code == 2 && strings.Contains(errOut, "nothing to retry")) {
		t.Fatalf("a second retry: exit %d\n%s", code, errOut)
	}
	waitFor(t, 60*time.Second, "the watch retrying the item", func() bool {
		it, _ := itemOf(t, g, run)
		return it.Status != store.ItemFailed && it.Status != store.ItemPending && it.Status != store.ItemRunning
	})
	if code, _, errOut := g.cadre(t, "", "stop"); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, errOut)
	}
	if code := watch.wait(t, 60*time.Second); code != 0 {
		t.Errorf("watch: exit %d", code)
	}
	it, retries := itemOf(t, g, run)
	if it.Status == store.ItemFailed || len(retries) != 1 || retries[0].Status != store.StepCompleted {
		t.Errorf("the watch's retry: item %s (%s), retries %+v, want one granted", it.Status, it.Error, retries)
	}
	log, _ := os.ReadFile(watch.log)
	if n := strings.Count(string(log), "retrying 1 of run "+run); n != 1 {
		t.Errorf("the watch took the retry up %d times, want once:\n%s", n, log)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(g.dir, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if s, err := st.GetStep(ctx, run, "1/work/executor#1/retry1"); err != nil || s.Status != store.StepCompleted {
		t.Errorf("the executor was not asked again: %+v %v", s, err)
	}
}
