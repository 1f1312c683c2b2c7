package cli_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const boardScenario = `rules:
  - role: coder
    task: quick
    actions:
      - run: [sh, -c, "while [ ! -e .board-gate ]; do sleep 0.05; done; rm .board-gate"]
      - write: {path: quick.txt, content: "quick\n"}
    say: Wrote quick.txt for the board.
    signal: {result: SUCCESS, summary: wrote quick.txt, confidence: 9, next: auditor}
    usage: {input_tokens: 1200, output_tokens: 300, cost_usd: 0.012}
  - role: coder
    task: ask
    actions:
      - write: {path: ask.txt, content: "ask\n"}
    say: Not sure this is what was meant.
    signal: {result: SUCCESS, summary: wrote ask.txt, confidence: 2, next: auditor}
    usage: {input_tokens: 800, output_tokens: 100, cost_usd: 0.006}
  - role: auditor
    actions: [{sleep: 300ms}]
    signal: {result: PASS, summary: accepted, confidence: 9, rating: 9, next: Done}
    usage: {input_tokens: 900, output_tokens: 80, cost_usd: 0.004}
`

// syncBuffer collects a process's stderr while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// boardRepo makes a git repository with two tasks for the script runner:
// quick codes until the test opens its gate (openGate) and passes its
// audit; ask pauses for a human (confidence 2).
func boardRepo(t *testing.T) (dir, home string) {
	t.Helper()
	work := t.TempDir()
	dir, home = filepath.Join(work, "repo"), filepath.Join(work, "home")
	os.MkdirAll(filepath.Join(dir, "tasks"), 0o755)
	os.MkdirAll(home, 0o755)
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = Cadre Test\n\temail = test@example.com\n"), 0o644)
	files := map[string]string{
		"cadre.yaml":     "defaults: {runner: fake}\nlimits: {parallel_issues: 2}\nrunners:\n  fake: {type: script, scenario: scenario.yaml}\n",
		"scenario.yaml":  boardScenario,
		"tasks/quick.md": "---\nstage: code\n---\n# Quick task\n",
		"tasks/ask.md":   "---\nstage: code\n---\n# Ask a human\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "init"}} {
		c := exec.Command("git", args...)
		c.Dir, c.Env = dir, append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir, home
}

func chromium(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (apt-get install -y chromium): the board's browser tests need it")
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1600, 1000),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true))
	ctx, cancel := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

func waitPage(t *testing.T, ctx context.Context, cond string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+cond+")"))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
			t.Fatalf("timed out waiting for %s (err %v); page text:\n%s", cond, err, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openGate lets item's scripted coder (boardScenario) finish its step.
func openGate(t *testing.T, repo, item string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(repo, ".cadre", "worktrees", item, ".board-gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func columnOf(item string) string {
	return `document.querySelector('.card[data-item="` + item + `"]')?.closest('.column')?.dataset.column`
}

// The board in the process of a run: a card moves from code to completed
// as the run goes, an item's page shows its step's output, and approving
// the paused item on the board lets the run go on to complete (exit 0)
// where without a board it would have exited 3.
func TestRunServeBoardInChromium(t *testing.T) {
	ctx := chromium(t)
	dir, home := boardRepo(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	cmd := exec.Command("cadre", "run", "--serve=127.0.0.1:0", "--token-file", tokenFile)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})

	boardURL := regexp.MustCompile(`board at (http://\S+/)`)
	var url string
	for deadline := time.Now().Add(20 * time.Second); url == ""; time.Sleep(20 * time.Millisecond) {
		if m := boardURL.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no board address printed; stderr:\n%s", stderr.String())
		}
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"#token="+strings.TrimSpace(string(token)))); err != nil {
		t.Fatal(err)
	}

	// quick's coder works until the page has shown its card in code
	// (however long the browser took to load it); the card then moves
	// through review to completed, pushed by the event stream.
	waitPage(t, ctx, columnOf("quick")+` === 'code'`, 15*time.Second)
	openGate(t, dir, "quick")
	waitPage(t, ctx, columnOf("quick")+` === 'completed'`, 30*time.Second)
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.__cadre.events`)); err != nil || got == 0 {
		t.Errorf("the page received %d events (err %v): the card did not move by the stream", got, err)
	}
	waitPage(t, ctx, columnOf("ask")+` === 'paused'`, 15*time.Second)
	shot(t, ctx, "run-serve-board-paused.png")

	// The item page: the coder's output, read from its output file.
	if err := clickNow(ctx, `.card[data-item="quick"] a.title`); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, `[...document.querySelectorAll('pre.file[data-kind="output"]')].some(p => p.textContent.includes('Wrote quick.txt for the board.'))`, 15*time.Second)
	shot(t, ctx, "run-serve-item.png")

	// Back on the board, approve the paused item: the run resumes it.
	if err := clickNow(ctx, `#nav-board`); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, `document.querySelector('.card[data-item="ask"] button.approve')`, 15*time.Second)
	if err := clickNow(ctx, `.card[data-item="ask"] button.approve`); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, columnOf("ask")+` === 'completed'`, 30*time.Second)
	shot(t, ctx, "run-serve-board-done.png")

	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("cadre run --serve: %v; stderr:\n%s", waitErr, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("cadre run --serve did not exit after the run completed; stderr:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "waiting for an answer on the board") {
		t.Errorf("the run did not wait for the board's answer; stderr:\n%s", stderr.String())
	}
}

func artifactsDir(t *testing.T) string {
	if dir := os.Getenv("CADRE_TEST_ARTIFACTS"); dir != "" {
		return dir
	}
	return t.TempDir()
}

func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	dir := artifactsDir(t)
	os.MkdirAll(dir, 0o755)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Errorf("screenshot: %v", err)
	}
	t.Logf("screenshot: %s", p)
}

// clickNow clicks the element selector finds, found and clicked in one go
// in the page: the board replaces a card's nodes as events come, so a node
// found first and clicked after may be gone by then.
func clickNow(ctx context.Context, selector string) error {
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); if (!e) return false; e.click(); return true; })()`, selector)
	ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("no element %s to click", selector)
	}
	return nil
}
