package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

const notifyScenario = `rules:
  - role: coder
    task: pause
    attempt: 1
    actions: [{write: {path: pause.txt, content: "p\n"}}]
    signal: {result: SUCCESS, summary: unsure, confidence: 2, next: auditor}
  - role: coder
    task: fail
    exit: 1
    stderr: boom
  - role: coder
    actions: [{write: {path: ok.txt, content: "ok\n"}}]
    signal: {result: SUCCESS, summary: done, confidence: 9, next: auditor}
    usage: {input_tokens: 10, output_tokens: 10, cost_usd: 0.5}
  - role: auditor
    signal: {result: PASS, summary: accepted, confidence: 9, rating: 9, next: Done}
`

// notifyRepo is a git repository whose cadre.yaml posts every kind of
// notification to webhook.
func notifyRepo(t *testing.T, webhook string) (string, func(args ...string) (int, string)) {
	t.Helper()
	work := t.TempDir()
	dir, home := filepath.Join(work, "repo"), filepath.Join(work, "home")
	os.MkdirAll(filepath.Join(dir, "tasks"), 0o755)
	os.MkdirAll(home, 0o755)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = Cadre Test\n\temail = test@example.com\n"), 0o644)
	files := map[string]string{
		"cadre.yaml": "defaults: {runner: fake}\nrunners:\n  fake: {type: script, scenario: scenario.yaml}\n" +
			"notify: {webhook: \"" + webhook + "\", on: [paused, failed, completed, budget]}\n",
		"scenario.yaml": notifyScenario,
	}
	for _, name := range []string{"pause", "fail", "ok", "budget1", "budget2"} {
		files["tasks/"+name+".md"] = "---\nstage: code\n---\n# Task " + name + "\n"
	}
	for name, content := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
	env := append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "init"}} {
		c := exec.Command("git", args...)
		c.Dir, c.Env = dir, env
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	cadre := func(args ...string) (int, string) {
		t.Helper()
		c := exec.Command("cadre", args...)
		c.Dir, c.Env = dir, env
		out, err := c.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	return dir, cadre
}

// The webhook gets exactly one accepted POST per event of each kind, its
// first try answered 500 and retried.
func TestNotifyOncePerEventWithRetries(t *testing.T) {
	var mu sync.Mutex
	tries := map[string]int{}
	accepted := map[string]int{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var body struct {
			Text  string `json:"text"`
			Kind  string `json:"kind"`
			Event struct {
				Type string `json:"type"`
			} `json:"event"`
		}
		if err := json.Unmarshal(data, &body); err != nil || body.Text == "" || body.Kind == "" {
			t.Errorf("bad notification %s: %v", data, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if tries[body.Kind]++; tries[body.Kind] == 1 {
			http.Error(w, "not now", http.StatusInternalServerError)
			return
		}
		accepted[body.Kind]++
	}))
	defer hook.Close()
	_, cadre := notifyRepo(t, hook.URL)

	code, out := cadre("run", "tasks/pause.md")
	if code != 3 {
		t.Fatalf("run pause: exit %d, want 3\n%s", code, out)
	}
	run := regexp.MustCompile(`run (\d{8}-\d{6}-[0-9a-f]{4})`).FindStringSubmatch(out)
	if run == nil {
		t.Fatalf("no run id in:\n%s", out)
	}
	if code, out := cadre("approve", run[1], "pause"); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, out)
	}
	if code, out := cadre("resume"); code != 0 {
		t.Fatalf("resume: exit %d, want 0\n%s", code, out)
	}
	if code, out := cadre("run", "tasks/fail.md"); code != 1 {
		t.Fatalf("run fail: exit %d, want 1\n%s", code, out)
	}
	// Two items reach the budget: one budget notification for the run.
	if code, out := cadre("run", "--budget-usd", "0.4", "--parallel", "1", "tasks/budget1.md", "tasks/budget2.md"); code != 3 {
		t.Fatalf("run budget: exit %d, want 3\n%s", code, out)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, kind := range []string{"paused", "completed", "failed", "budget"} {
		if accepted[kind] != 1 {
			t.Errorf("%s: %d notifications accepted, want 1", kind, accepted[kind])
		}
		if tries[kind] < 2 {
			t.Errorf("%s: %d tries, want the 500 retried", kind, tries[kind])
		}
	}
}

// A webhook that hangs does not hold the run up: the journal records the
// run completed while the webhook still holds its request.
func TestNotifyBlockedWebhookDoesNotHoldTheRun(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer hook.Close()
	defer free()
	_, cadre := notifyRepo(t, hook.URL)

	done := make(chan string, 1)
	go func() {
		_, out := cadre("run", "tasks/ok.md")
		done <- out
	}()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, status := cadre("status", "--json")
		var st struct{ Status string }
		if json.Unmarshal([]byte(status), &st) == nil && st.Status == "completed" {
			break // the run completed, and the webhook has not answered
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run did not complete while the webhook was blocked; status:\n%s", status)
		}
	}
	select {
	case <-release:
		t.Fatal("the webhook was released before the run completed")
	default:
	}
	free()
	<-done
}
