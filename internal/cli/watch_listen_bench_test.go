package cli_test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/forge/forgetest"
)

// BenchmarkWebhookToReaction is the time from a failed check's webhook
// to its fix pushed, on an idle watch whose interval is an hour: the
// wake-up's settling, a pass, fix-surgeon (the script runner) and the
// push. The target is under 2 s:
//
//	go test ./internal/cli -run '^$' -bench WebhookToReaction -benchtime 5x
func BenchmarkWebhookToReaction(b *testing.B) {
	b.Setenv("CADRE_HOOK_SECRET", hookSecret)
	g := listenRepo(b, "follow: {ci_failed: {rounds: 1000}}\n")
	const branch = "cadre/1-fix-the-frobnicator"
	pr := g.fake.PRs("acme", "widgets")[0].Number
	log := filepath.Join(g.work, "watch.log")
	url := startWatchTB(b, g, log)
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		before, head := commitsTB(b, g.bare, branch), g.rev(b, branch)
		g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{Name: "test", Conclusion: "failure", Title: "1 test failed"})
		b.StartTimer()
		sent := time.Now()
		if code := postHook(b, url, hookSecret, fmt.Sprint("bench-", i), head, pr); code != http.StatusAccepted {
			b.Fatalf("webhook: %d", code)
		}
		for commitsTB(b, g.bare, branch) == before {
			if time.Since(sent) > time.Minute {
				out, _ := os.ReadFile(log)
				b.Fatalf("no fix pushed within a minute of the webhook:\n%s", out)
			}
			time.Sleep(10 * time.Millisecond)
		}
		total += time.Since(sent)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/reaction")
}

// startWatchTB starts cadre watch --listen with an hour's interval, its
// output to log, stops it when the benchmark ends, and returns the
// webhook URL once its first pass is done.
func startWatchTB(b testing.TB, g *githubRepo, log string) string {
	b.Helper()
	f, err := os.Create(log)
	if err != nil {
		b.Fatal(err)
	}
	c := exec.Command("cadre", "watch", "--listen", "127.0.0.1:0", "--interval", "1h")
	c.Dir = g.dir
	c.Env = append(os.Environ(), "GITHUB_TOKEN="+canary)
	c.Stdout, c.Stderr = f, f
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		c.Process.Kill()
		c.Wait()
		f.Close()
	})
	for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(20 * time.Millisecond) {
		out, _ := os.ReadFile(log)
		if m := listeningOn("github").FindSubmatch(out); m != nil && strings.Contains(string(out), "pull request(s) followed") {
			return string(m[1])
		}
	}
	out, _ := os.ReadFile(log)
	b.Fatalf("the watch did not listen and pass within a minute:\n%s", out)
	return ""
}

// commitsTB counts the origin's commits on branch.
func commitsTB(b testing.TB, bare, branch string) int {
	b.Helper()
	out, err := exec.Command("git", "-C", bare, "rev-list", "--count", branch).Output()
	if err != nil {
		b.Fatalf("rev-list %s: %v", branch, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		b.Fatal(err)
	}
	return n
}
