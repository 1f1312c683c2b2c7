package forge_test

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/forge/forgetest"
)

// BenchmarkIssueWrites makes the GitHub writes of 30 issues, 10 at a time
// as a fleet does (a "started" comment, the pull request, a "done"
// comment), against the fake on the real clock:
//
//	go test ./internal/forge -run '^$' -bench IssueWrites -benchtime 1x
//
// "paced" reports a low budget, so writes queue as they all did before
// pacing became adaptive.
func BenchmarkIssueWrites(b *testing.B) {
	for _, bb := range []struct {
		name      string
		gap       time.Duration
		remaining int
	}{
		{"interval=0", 0, 5000},
		{"interval=250ms/ample", 250 * time.Millisecond, 5000},
		{"interval=250ms/paced", 250 * time.Millisecond, 400},
	} {
		b.Run(bb.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				srv := forgetest.New(b, token)
				srv.SetRateLimit(bb.remaining, 5000)
				issues := make([]int, 30)
				for i := range issues {
					issues[i] = srv.AddIssue("o", "r", forgetest.Issue{Title: fmt.Sprint("issue ", i)})
				}
				c, err := forge.New(srv.URL, token, forge.WithWriteGap(bb.gap))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				var g errgroup.Group
				g.SetLimit(10)
				for _, n := range issues {
					g.Go(func() error { return issueWrites(c, n) })
				}
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if got := len(srv.PRs("o", "r")); got != len(issues) {
					b.Fatalf("%d pull requests, want %d", got, len(issues))
				}
				b.ReportMetric(float64(srv.MaxParallelWrites()), "max-writes-at-once")
				srv.Close()
			}
		})
	}
}

func issueWrites(c *forge.Client, n int) error {
	run := fmt.Sprint("bench-", n)
	if _, err := c.EnsureComment(ctx, "o", "r", n, forge.CommentMarker(run, "i", "started"), "started"); err != nil {
		return err
	}
	p := forge.NewPR{Title: fmt.Sprint("Fix #", n), Body: fmt.Sprint("Closes #", n), Head: fmt.Sprint("cadre/", n), Base: "main"}
	if _, _, err := c.EnsurePR(ctx, "o", "r", p); err != nil {
		return err
	}
	_, err := c.EnsureComment(ctx, "o", "r", n, forge.CommentMarker(run, "i", "done"), "done")
	return err
}
