package gitlabtest

import (
	"net/http"
	"strconv"
	"strings"
)

// match reports whether segs has the shape of pattern, where "*" stands
// for any one segment, and returns the segments "*" stood for.
func match(segs []string, pattern ...string) ([]string, bool) {
	if len(segs) != len(pattern) {
		return nil, false
	}
	var vars []string
	for i, p := range pattern {
		switch {
		case p == "*":
			vars = append(vars, segs[i])
		case p != segs[i]:
			return nil, false
		}
	}
	return vars, true
}

// route serves a request under /projects/:id; segs is the rest of the
// path, decoded.
func (c *ctx) route(segs []string) answer {
	get, post := c.req.Method == http.MethodGet, c.req.Method == http.MethodPost
	if len(segs) >= 2 && segs[0] == "merge_requests" {
		return c.routeMR(segs[1:])
	}
	if len(segs) >= 2 && segs[0] == "issues" {
		return c.routeIssue(segs[1:])
	}
	if len(segs) >= 3 && segs[0] == "repository" && segs[1] == "branches" && get {
		return c.branch(strings.Join(segs[2:], "/"))
	}
	switch {
	case len(segs) == 0 && get:
		return ok(c.projectJSON())
	case is(segs, "approvals") && get:
		return ok(c.projectApprovalsJSON())
	case is(segs, "issues") && get:
		return c.listIssues()
	case is(segs, "merge_requests") && get:
		return c.listMRs()
	case is(segs, "merge_requests") && post:
		return c.createMR()
	case is(segs, "pipelines") && get:
		return c.listPipelines()
	case (is(segs, "members") || is(segs, "members", "all")) && get:
		return c.members()
	}
	if v, hit := match(segs, "pipelines", "*"); hit && get {
		return c.withPipeline(v[0], func(pl *pipeline) answer { return ok(c.pipelineJSON(pl)) })
	}
	if v, ok := match(segs, "pipelines", "*", "jobs"); ok && get {
		return c.withPipeline(v[0], c.listJobs)
	}
	if v, ok := match(segs, "jobs", "*"); ok && get {
		return c.withJob(v[0], false)
	}
	if v, ok := match(segs, "jobs", "*", "trace"); ok && get {
		return c.withJob(v[0], true)
	}
	return notFound()
}

func is(segs []string, pattern ...string) bool {
	_, ok := match(segs, pattern...)
	return ok
}

// routeIssue serves /projects/:id/issues/:iid…; segs starts at the iid.
func (c *ctx) routeIssue(segs []string) answer {
	iid, err := strconv.Atoi(segs[0])
	it := c.p.issues[iid]
	if err != nil || it == nil {
		return notFound()
	}
	switch rest := segs[1:]; {
	case len(rest) == 0 && c.req.Method == http.MethodGet:
		return ok(c.issueJSON(it))
	case is(rest, "notes") && c.req.Method == http.MethodGet:
		return c.listIssueNotes(it)
	case is(rest, "notes") && c.req.Method == http.MethodPost:
		return c.createIssueNote(it)
	}
	return notFound()
}

// routeMR serves /projects/:id/merge_requests/:iid…; segs starts at the
// iid.
func (c *ctx) routeMR(segs []string) answer {
	iid, err := strconv.Atoi(segs[0])
	m := c.p.mrs[iid]
	if err != nil || m == nil {
		return notFound()
	}
	get, post, put := c.req.Method == http.MethodGet, c.req.Method == http.MethodPost, c.req.Method == http.MethodPut
	rest := segs[1:]
	c.rebasingOn(m)
	switch {
	case len(rest) == 0 && get:
		return ok(c.mrJSON(m, true))
	case len(rest) == 0 && put:
		return c.updateMR(m)
	case is(rest, "merge") && put:
		return c.merge(m)
	case is(rest, "rebase") && put:
		return c.rebaseMR(m)
	case is(rest, "approvals") && get:
		return ok(c.approvalsJSON(m))
	case is(rest, "approval_state") && get:
		return ok(c.approvalStateJSON(m))
	case is(rest, "versions") && get:
		return c.listVersions(m)
	case is(rest, "notes") && get:
		return c.listMRNotes(m)
	case is(rest, "notes") && post:
		return c.createMRNote(m)
	case is(rest, "discussions") && get:
		return c.listDiscussions(m)
	case is(rest, "discussions") && post:
		return c.createDiscussion(m)
	case is(rest, "pipelines") && get:
		return c.listMRPipelines(m)
	}
	if v, hit := match(rest, "discussions", "*"); hit && get {
		if d := findDiscussion(m, v[0]); d != nil {
			return ok(c.discussionJSON(m, d))
		}
		return notFound()
	}
	if v, ok := match(rest, "discussions", "*", "notes"); ok && post {
		return c.reply(m, v[0])
	}
	return notFound()
}
