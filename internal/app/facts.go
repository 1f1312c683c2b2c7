package app

import (
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/webhook"
)

// Facts reads GitHub's deliveries as the follower takes them in: a pull
// request's new head or end as the delivery shows it, a check run, job
// or status as checks are read from the API (its texts cut and masked
// alike), a push to the base; a review or review comment is asked about.
func (g *GitHub) Facts(events []webhook.Event) []follow.Fact {
	var out []follow.Fact
	for _, e := range events {
		switch {
		case e.Pull != nil:
			p := e.Pull
			out = append(out, follow.Fact{PR: e.PR, Pull: &follow.Head{Number: e.PR, State: p.State, Merged: p.Merged,
				Head: p.Head, Base: p.Base, Title: p.Title, Updated: p.Updated}})
		case e.Check != nil && e.Head != "" && e.Check.Name != "":
			out = append(out, follow.Fact{PR: e.PR, Commit: e.Head, Run: g.run(e)})
		case e.Kind == "push":
			out = append(out, follow.Fact{Base: true})
		case e.PR != 0 || e.Head != "":
			out = append(out, follow.Fact{PR: e.PR, Commit: e.Head, Ask: true})
		}
	}
	return out
}

// run is a delivered check run, job or status as the follower keeps it.
func (g *GitHub) run(e webhook.Event) *follow.Run {
	c := e.Check
	read := forge.ReadDelivered(*c, e.Kind == "status")
	r := &follow.Run{Name: c.Name, Order: c.ID, Done: len(read.Pending) == 0, Passed: len(read.Succeeded) > 0}
	if len(read.Failed) > 0 {
		f := read.Failed[0]
		// CI output may echo a secret; it is shown and posted.
		r.Failed = &follow.Check{Name: f.Name, Conclusion: f.Conclusion, Summary: f.Summary, Text: g.mask.String(f.Text), JobID: f.JobID}
	}
	return r
}

// Facts reads GitLab's deliveries as the follower takes them in: a push
// to the target branch moves the base, and what a merge request's,
// pipeline's, job's or note's delivery names is asked about.
func (g *GitLab) Facts(events []webhook.Event) []follow.Fact {
	var out []follow.Fact
	for _, e := range events {
		switch {
		case e.Kind == "push":
			out = append(out, follow.Fact{Base: true})
		case e.PR != 0 || e.Head != "":
			out = append(out, follow.Fact{PR: e.PR, Commit: e.Head, Ask: true})
		}
	}
	return out
}
