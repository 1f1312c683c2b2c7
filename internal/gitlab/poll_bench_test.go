package gitlab_test

import (
	"context"
	"testing"

	"github.com/cadre-dev/cadre/internal/gitlab"
	"github.com/cadre-dev/cadre/internal/gitlab/gitlabtest"
)

// BenchmarkPollMR is one poll of a merge request nothing changed on, as
// cadre's view makes it: the merge request, its head pipeline, threads and
// approvals. It reports the requests each poll sends and how many of them
// GitLab answered in full (the rest are 304s).
func BenchmarkPollMR(b *testing.B) {
	s := gitlabtest.New(b, token)
	s.AddProject(project)
	iid := s.AddMR(project, gitlabtest.MR{Title: "t", Source: "cadre/b", Target: "main", SHA: sha1})
	s.SetPipeline(project, sha1, "running", gitlabtest.Job{Name: "unit", Status: "running"}, gitlabtest.Job{Name: "lint", Status: "success"})
	s.AddDiscussion(project, iid, "ann", "rename this", &gitlabtest.Position{Path: "a.go", Line: 3})
	c, err := gitlab.New(s.URL+"/api/v4", token)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	poll := func() {
		mr, err := c.MR(ctx, project, iid)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.HeadPipeline(ctx, project, iid, mr.SHA); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Threads(ctx, project, iid); err != nil {
			b.Fatal(err)
		}
		if _, _, err := c.Approvals(ctx, project, iid); err != nil {
			b.Fatal(err)
		}
	}
	poll() // the first poll fills the kept answers
	before := s.Counts()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		poll()
	}
	b.StopTimer()
	after := s.Counts()
	b.ReportMetric(float64(after.Requests-before.Requests)/float64(b.N), "requests/op")
	b.ReportMetric(float64(after.Charged()-before.Charged())/float64(b.N), "charged/op")
}
