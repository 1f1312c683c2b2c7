package forgetest

import (
	"encoding/json"
	"slices"
	"strings"
)

// The webhook payloads GitHub sends carry the same objects its REST API
// serves: these build them from the fake's state, for tests that deliver
// them to cadre watch --listen.

// PullRequestHook is the body of a pull_request delivery with action
// (synchronize, closed…) for pull request number as it now stands.
func (s *Server) PullRequestHook(owner, name string, number int, action string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name)
	rec := r.issues[number]
	if rec == nil || rec.pr == nil {
		s.t.Fatalf("forgetest: PullRequestHook: no pull request %s/%s#%d", owner, name, number)
	}
	return s.hook(r, map[string]any{"action": action, "number": number, "pull_request": s.prJSON(r, rec, true)})
}

// CheckRunHook is the body of a check_run delivery with action (created,
// completed) for the run of commit sha named name, as it now stands; its
// pull_requests are the open ones whose head is sha.
func (s *Server) CheckRunHook(owner, name, sha, run, action string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name)
	i := slices.IndexFunc(r.checkRuns[sha], func(cr CheckRun) bool { return cr.Name == run })
	if i < 0 {
		s.t.Fatalf("forgetest: CheckRunHook: no check run %q of %s", run, sha)
	}
	cr := s.checkRunJSON(r, sha, r.checkRuns[sha][i])
	var prs []any
	for _, rec := range r.issues {
		if rec.pr != nil && rec.pr.State == "open" && s.headSHA(r, rec.pr) == sha {
			prs = append(prs, map[string]any{"number": rec.pr.Number, "head": map[string]any{"ref": rec.pr.Head, "sha": sha},
				"base": map[string]any{"ref": rec.pr.Base}})
		}
	}
	if prs != nil {
		cr["pull_requests"] = prs
	}
	return s.hook(r, map[string]any{"action": action, "check_run": cr})
}

// ReviewHook is the body of a pull_request_review delivery with action
// (submitted, dismissed) for review id of pull request number; as in
// GitHub's deliveries, the review's state is lower-case there.
func (s *Server) ReviewHook(owner, name string, number int, id int64, action string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, rec := s.pull(owner, name, number, "ReviewHook")
	i := slices.IndexFunc(rec.reviews, func(rv Review) bool { return rv.ID == id })
	if i < 0 {
		s.t.Fatalf("forgetest: ReviewHook: no review %d of %s/%s#%d", id, owner, name, number)
	}
	rv := s.reviewJSON(r, rec, rec.reviews[i])
	rv["state"] = strings.ToLower(rec.reviews[i].State)
	return s.hook(r, map[string]any{"action": action, "review": rv, "pull_request": s.prJSON(r, rec, false)})
}

// StatusHook is the body of a status delivery for the status of context
// on commit sha as it now stands.
func (s *Server) StatusHook(owner, name, sha, context string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name)
	i := slices.IndexFunc(r.statuses[sha], func(st Status) bool { return st.Context == context })
	if i < 0 {
		s.t.Fatalf("forgetest: StatusHook: no status %q of %s", context, sha)
	}
	st := r.statuses[sha][i]
	s.ids++ // a later status has a greater id
	return s.hook(r, map[string]any{"id": s.ids, "sha": sha, "name": r.owner + "/" + r.name, "context": st.Context,
		"state": st.State, "description": nullable(st.Description), "target_url": nullable(st.TargetURL), "branches": []any{},
		"created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z"})
}

// PushHook is the body of a push delivery moving branch from before to
// after.
func (s *Server) PushHook(owner, name, branch, before, after string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hook(s.repo(owner, name), map[string]any{"ref": "refs/heads/" + branch, "before": before, "after": after,
		"created": false, "deleted": false, "forced": false, "commits": []any{}, "pusher": map[string]any{"name": owner}})
}

// hook adds the repository and sender every delivery has.
func (s *Server) hook(r *repo, body map[string]any) []byte {
	body["repository"] = map[string]any{"id": 1296269, "name": r.name, "full_name": r.owner + "/" + r.name,
		"owner": user(r.owner), "private": false, "default_branch": "main"}
	body["sender"] = user(r.owner)
	data, err := json.Marshal(body)
	if err != nil {
		s.t.Fatalf("forgetest: hook: %v", err)
	}
	return data
}
