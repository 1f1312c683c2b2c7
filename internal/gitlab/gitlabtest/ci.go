package gitlabtest

import (
	"slices"
	"strconv"
	"time"
)

// SetPipeline runs a new pipeline with status and jobs on commit sha of
// project and returns its id. The newest pipeline on a merge request's
// head is its head_pipeline.
func (s *Server) SetPipeline(path, sha, status string, jobs ...Job) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.project(path)
	p.refs = nil
	s.sync(p)
	now := time.Now()
	pl := &pipeline{id: s.next("pipeline"), sha: sha, ref: s.refOf(p, sha), status: status, created: now, updated: now}
	pl.iid = int64(len(p.pipelines) + 1)
	pl.jobs = s.fillJobs(jobs)
	p.pipelines = append(p.pipelines, pl)
	return pl.id
}

// UpdatePipeline sets the status of pipeline id and, when jobs are given,
// replaces its jobs, as a pipeline that runs on does.
func (s *Server) UpdatePipeline(path string, id int64, status string, jobs ...Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pl := range s.project(path).pipelines {
		if pl.id == id {
			pl.status, pl.updated = status, time.Now()
			if len(jobs) > 0 {
				pl.jobs = s.fillJobs(jobs)
			}
			return
		}
	}
	s.t.Fatalf("gitlabtest: UpdatePipeline: no pipeline %d in %s", id, path)
}

func (s *Server) fillJobs(jobs []Job) []Job {
	jobs = slices.Clone(jobs)
	for i := range jobs {
		if jobs[i].ID == 0 {
			jobs[i].ID = s.next("job")
		}
		jobs[i].Stage = cmpOr(jobs[i].Stage, "test")
	}
	return jobs
}

// refOf is the branch a pipeline on sha ran for: an open merge request's
// source with that head, else a branch at sha, else the default branch.
func (s *Server) refOf(p *project, sha string) string {
	for _, m := range p.mrs {
		if m.SHA == sha && m.State == "opened" {
			return m.Source
		}
	}
	if p.gitDir != "" {
		if p.refs == nil {
			p.refs = branches(p.gitDir)
		}
		for name, at := range p.refs {
			if at == sha {
				return name
			}
		}
	}
	return p.defaultBranch
}

// pipelineInfoJSON is a pipeline as lists give it.
func (c *ctx) pipelineInfoJSON(pl *pipeline) map[string]any {
	return map[string]any{
		"id": pl.id, "iid": pl.iid, "project_id": c.p.id, "sha": pl.sha, "ref": pl.ref, "status": pl.status,
		"source": "push", "created_at": ts(pl.created), "updated_at": ts(pl.updated),
		"web_url": c.webURL("/-/pipelines/" + itoa(pl.id)),
	}
}

// pipelineJSON is one pipeline in full, as fetched or as a merge request's
// head_pipeline.
func (c *ctx) pipelineJSON(pl *pipeline) map[string]any {
	out := c.pipelineInfoJSON(pl)
	done := slices.Contains([]string{"success", "failed", "canceled", "skipped"}, pl.status)
	var finished any
	if done {
		finished = ts(pl.updated)
	}
	out["before_sha"] = "0000000000000000000000000000000000000000"
	out["tag"] = false
	out["yaml_errors"] = nil
	out["user"] = c.s.userJSON(c.s.Username)
	out["started_at"] = ts(pl.created)
	out["finished_at"] = finished
	out["committed_at"] = nil
	out["duration"] = nil
	out["queued_duration"] = nil
	out["coverage"] = nil
	return out
}

// listPipelines serves GET /projects/:id/pipelines, newest first, filtered
// by sha, ref and status.
func (c *ctx) listPipelines() answer {
	var out []any
	for i := len(c.p.pipelines) - 1; i >= 0; i-- {
		pl := c.p.pipelines[i]
		if c.q.has("sha") && pl.sha != c.q.str("sha") ||
			c.q.has("ref") && pl.ref != c.q.str("ref") ||
			c.q.has("status") && pl.status != c.q.str("status") {
			continue
		}
		out = append(out, c.pipelineInfoJSON(pl))
	}
	return c.page(out)
}

// listMRPipelines serves …/merge_requests/:iid/pipelines: those run on
// any head the merge request has had, newest first.
func (c *ctx) listMRPipelines(m *mr) answer {
	heads := map[string]bool{m.SHA: true}
	for _, v := range m.versions {
		heads[v.head] = true
	}
	var out []any
	for i := len(c.p.pipelines) - 1; i >= 0; i-- {
		if pl := c.p.pipelines[i]; heads[pl.sha] {
			out = append(out, c.pipelineInfoJSON(pl))
		}
	}
	return c.page(out)
}

func (c *ctx) withPipeline(id string, serve func(*pipeline) answer) answer {
	for _, pl := range c.p.pipelines {
		if itoa(pl.id) == id {
			return serve(pl)
		}
	}
	return notFound()
}

func (c *ctx) jobJSON(pl *pipeline, j Job) map[string]any {
	var started, finished, failure any
	if j.Status != "created" && j.Status != "pending" && j.Status != "manual" && j.Status != "skipped" {
		started = ts(pl.created)
	}
	if slices.Contains([]string{"success", "failed", "canceled"}, j.Status) {
		finished = ts(pl.updated)
	}
	out := map[string]any{
		"id": j.ID, "name": j.Name, "stage": j.Stage, "status": j.Status, "allow_failure": j.AllowFailure,
		"ref": pl.ref, "tag": false, "coverage": nil, "created_at": ts(pl.created), "started_at": started,
		"finished_at": finished, "erased_at": nil, "duration": nil, "queued_duration": nil,
		"user": c.s.userJSON(c.s.Username), "commit": c.commitJSON(pl.sha),
		"pipeline":  map[string]any{"id": pl.id, "project_id": c.p.id, "ref": pl.ref, "sha": pl.sha, "status": pl.status},
		"web_url":   c.webURL("/-/jobs/" + itoa(j.ID)),
		"artifacts": []any{}, "artifacts_expire_at": nil, "tag_list": []string{}, "runner": nil,
	}
	if j.Status == "failed" {
		failure = "script_failure"
		out["failure_reason"] = failure
	}
	return out
}

// listJobs serves …/pipelines/:id/jobs, filtered by scope[]; the fake
// keeps no retried jobs, so include_retried changes nothing.
func (c *ctx) listJobs(pl *pipeline) answer {
	scope := c.q["scope"]
	var out []any
	for _, j := range pl.jobs {
		if len(scope) == 0 || slices.Contains(scope, j.Status) {
			out = append(out, c.jobJSON(pl, j))
		}
	}
	return c.page(out)
}

// withJob serves GET /projects/:id/jobs/:id, or its trace in plain text.
func (c *ctx) withJob(id string, trace bool) answer {
	want, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return notFound()
	}
	for _, pl := range c.p.pipelines {
		for _, j := range pl.jobs {
			if j.ID != want {
				continue
			}
			if trace {
				return answer{status: 200, text: []byte(j.Trace)}
			}
			return ok(c.jobJSON(pl, j))
		}
	}
	return notFound()
}
