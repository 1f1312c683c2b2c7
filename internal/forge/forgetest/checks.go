package forgetest

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// CheckRun is a check run on a commit, as a CI app reports it.
type CheckRun struct {
	// ID is the run's id; 0 takes the next free one. For a GitHub
	// Actions job set JobID instead: GitHub gives the job's check run
	// the job's own id.
	ID    int64
	JobID int64 // a GitHub Actions job; 0 for another app's check run
	Name  string
	// Status is queued, in_progress or completed; "" means completed when
	// Conclusion is set, queued otherwise.
	Status string
	// Conclusion is success, failure, neutral, cancelled, skipped,
	// timed_out, action_required, startup_failure or stale once
	// completed; "" before.
	Conclusion string
	Title      string // output.title
	Summary    string // output.summary
	Text       string // output.text
	DetailsURL string // "" = the run's page on github.com
}

// Status is a commit status, as a CI service posts it.
type Status struct {
	Context     string
	State       string // error, failure, pending or success
	Description string
	TargetURL   string
}

// SetCheckRun adds cr to the check runs of commit sha in owner/repo, or
// replaces the one of the same name (the check-runs list shows the latest
// run of each name), and returns its id.
func (s *Server) SetCheckRun(owner, name, sha string, cr CheckRun) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name)
	switch {
	case cr.JobID != 0:
		cr.ID = cr.JobID
	case cr.ID == 0:
		s.ids++
		cr.ID = s.ids
	}
	if cr.Status == "" {
		cr.Status = "queued"
		if cr.Conclusion != "" {
			cr.Status = "completed"
		}
	}
	runs := r.checkRuns[sha]
	if i := slices.IndexFunc(runs, func(h CheckRun) bool { return h.Name == cr.Name }); i >= 0 {
		runs[i] = cr
	} else {
		r.checkRuns[sha] = append(runs, cr)
	}
	return cr.ID
}

// SetStatus sets the status of context on commit sha in owner/repo,
// replacing an earlier one of the same context (the combined status
// shows the latest of each).
func (s *Server) SetStatus(owner, name, sha string, st Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name)
	sts := r.statuses[sha]
	if i := slices.IndexFunc(sts, func(h Status) bool { return h.Context == st.Context }); i >= 0 {
		sts[i] = st
	} else {
		r.statuses[sha] = append(sts, st)
	}
}

// SetJobLog sets the log of GitHub Actions job jobID in owner/repo.
func (s *Server) SetJobLog(owner, name string, jobID int64, log string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repo(owner, name).jobLogs[jobID] = log
}

// resolve turns a branch name into its commit when the repository has a
// git directory; a sha, or a name git does not know, is returned as is.
func (s *Server) resolve(r *repo, ref string) string {
	if _, ok := r.checkRuns[ref]; ok {
		return ref
	}
	if _, ok := r.statuses[ref]; ok {
		return ref
	}
	if sha, ok := r.rev(ref); ok {
		return sha
	}
	return ref
}

func (s *Server) listCheckRuns(req *http.Request, r *repo, ref string, q url.Values) answer {
	sha := s.resolve(r, ref)
	items := mapSlice(r.checkRuns[sha], func(cr CheckRun) any { return s.checkRunJSON(r, sha, cr) })
	return s.wrapped(req, q, items, func(page []any) map[string]any {
		return map[string]any{"total_count": len(items), "check_runs": page}
	})
}

func (s *Server) checkRunJSON(r *repo, sha string, cr CheckRun) map[string]any {
	app := map[string]any{"id": 2, "slug": "ci-app", "name": "CI App"}
	page := fmt.Sprintf("https://github.com/%s/%s/runs/%d", r.owner, r.name, cr.ID)
	if cr.JobID != 0 {
		app = map[string]any{"id": 15368, "slug": "github-actions", "name": "GitHub Actions"}
		page = fmt.Sprintf("https://github.com/%s/%s/actions/runs/%d/job/%d", r.owner, r.name, 9000+cr.JobID, cr.JobID)
	}
	details := cr.DetailsURL
	if details == "" {
		details = page
	}
	var completed any
	if cr.Status == "completed" {
		completed = "2024-01-01T00:05:00Z"
	}
	return map[string]any{
		"id": cr.ID, "node_id": fmt.Sprintf("CR_%d", cr.ID), "head_sha": sha, "external_id": "",
		"url":      fmt.Sprintf("%s/repos/%s/%s/check-runs/%d", s.srv.URL, r.owner, r.name, cr.ID),
		"html_url": page, "details_url": details, "name": cr.Name,
		"status": cr.Status, "conclusion": nullable(cr.Conclusion),
		"started_at": "2024-01-01T00:00:00Z", "completed_at": completed,
		"output": map[string]any{
			"title": nullable(cr.Title), "summary": nullable(cr.Summary), "text": nullable(cr.Text),
			"annotations_count": 0,
			"annotations_url":   fmt.Sprintf("%s/repos/%s/%s/check-runs/%d/annotations", s.srv.URL, r.owner, r.name, cr.ID),
		},
		"check_suite": map[string]any{"id": 5000 + cr.ID}, "app": app, "pull_requests": []any{},
	}
}

// combinedStatus serves the latest status of each context and their
// combined state: failure when any failed or errored, pending when any is
// pending or there are none, success otherwise.
func (s *Server) combinedStatus(req *http.Request, r *repo, ref string, q url.Values) answer {
	sha := s.resolve(r, ref)
	sts := r.statuses[sha]
	state := "success"
	if len(sts) == 0 {
		state = "pending"
	}
	for _, st := range sts {
		switch {
		case st.State == "failure" || st.State == "error":
			state = "failure"
		case st.State == "pending" && state != "failure":
			state = "pending"
		}
	}
	items := make([]any, 0, len(sts))
	for i, st := range sts {
		items = append(items, map[string]any{
			"id": 7000 + i, "node_id": fmt.Sprintf("SC_%d", 7000+i),
			"url":   fmt.Sprintf("%s/repos/%s/%s/statuses/%s", s.srv.URL, r.owner, r.name, sha),
			"state": st.State, "description": nullable(st.Description), "target_url": nullable(st.TargetURL),
			"context": st.Context, "avatar_url": nil,
			"created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
		})
	}
	return s.wrapped(req, q, items, func(page []any) map[string]any {
		return map[string]any{
			"state": state, "statuses": page, "sha": sha, "total_count": len(items),
			"repository": map[string]any{"id": 1, "name": r.name, "full_name": r.owner + "/" + r.name},
			"commit_url": fmt.Sprintf("%s/repos/%s/%s/commits/%s", s.srv.URL, r.owner, r.name, sha),
			"url":        fmt.Sprintf("%s/repos/%s/%s/commits/%s/status", s.srv.URL, r.owner, r.name, sha),
		}
	})
}

// jobLogs answers as GitHub does: 302 to a short-lived signed link, off
// the API, where the log is served as plain text to anyone holding it.
func (s *Server) jobLogs(r *repo, id string) answer {
	n, err := strconv.ParseInt(id, 10, 64)
	if _, ok := r.jobLogs[n]; err != nil || !ok {
		return notFound()
	}
	link := fmt.Sprintf("%s%s%s/%s/%d?sig=fake-signature", s.srv.URL, downloadPath, r.owner, r.name, n)
	return answer{status: http.StatusFound, header: map[string]string{"Location": link}}
}

// downloadPath is where the signed log links point.
const downloadPath = "/_download/logs/"

// download serves a signed log link; it needs no credential.
func (s *Server) download(req *http.Request) answer {
	parts := strings.Split(strings.TrimPrefix(req.URL.Path, downloadPath), "/")
	if len(parts) != 3 || req.URL.Query().Get("sig") == "" {
		return answer{status: http.StatusForbidden, text: []byte("AuthenticationFailed"), free: true}
	}
	r := s.repos[parts[0]+"/"+parts[1]]
	n, err := strconv.ParseInt(parts[2], 10, 64)
	if r == nil || err != nil {
		return answer{status: http.StatusNotFound, text: []byte("BlobNotFound"), free: true}
	}
	log, ok := r.jobLogs[n]
	if !ok {
		return answer{status: http.StatusNotFound, text: []byte("BlobNotFound"), free: true}
	}
	return answer{status: http.StatusOK, text: []byte(log), free: true}
}

// CheckRuns returns the check runs of commit sha in owner/repo, the
// latest of each name.
func (s *Server) CheckRuns(owner, name, sha string) []CheckRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.repo(owner, name).checkRuns[sha])
}

// Statuses returns the commit statuses of sha in owner/repo, the latest
// of each context.
func (s *Server) Statuses(owner, name, sha string) []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.repo(owner, name).statuses[sha])
}
