package forge_test

import (
	"fmt"
	"testing"

	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/forge/forgetest"
)

// BenchmarkPoll polls 20 open pull requests as following them to their
// merge does (the pull request, its head's checks, reviews, review
// comments) and reports the rate limit a poll spends, the first time and
// once nothing changed:
//
//	go test ./internal/forge -run '^$' -bench Poll -benchtime 1x
func BenchmarkPoll(b *testing.B) {
	for range b.N {
		b.StopTimer()
		srv := forgetest.New(b, token)
		var prs []int
		for i := range 20 {
			head := fmt.Sprintf("%040x", i+1)
			n := srv.AddPR("o", "r", forgetest.PR{Title: fmt.Sprint("p", i), Head: fmt.Sprint("h", i), Base: "main", HeadSHA: head})
			srv.AddReview("o", "r", n, forgetest.Review{Author: "alice", State: "APPROVED"})
			srv.SetCheckRun("o", "r", head, forgetest.CheckRun{JobID: int64(i + 1), Name: "test", Conclusion: "success"})
			prs = append(prs, n)
		}
		c, err := forge.New(srv.URL, token)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		poll(b, c, prs)
		first := srv.Counts()
		poll(b, c, prs)
		b.StopTimer()
		second := srv.Counts()
		b.ReportMetric(float64(first.Charged()), "charged-first-poll")
		b.ReportMetric(float64(second.Charged()-first.Charged()), "charged-unchanged-poll")
		b.ReportMetric(float64(second.Requests-first.Requests), "requests-unchanged-poll")
		srv.Close()
	}
}
