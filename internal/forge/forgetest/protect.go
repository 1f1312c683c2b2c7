package forgetest

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Protection is what a base branch requires before a merge, as branch
// protection and rulesets say it.
type Protection struct {
	// Contexts are the checks classic branch protection requires.
	Contexts []string
	// Rules are the checks a ruleset requires.
	Rules []string
	// Hidden answers the protection's endpoint 403, as GitHub does for a
	// token without the administration permission (rulesets stay
	// readable).
	Hidden bool
}

// Protect sets what branch of owner/repo requires. A merge of a pull
// request into it whose head lacks a required check's success is refused,
// as GitHub refuses it.
func (s *Server) Protect(owner, name, branch string, p Protection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name)
	if r.protection == nil {
		r.protection = map[string]Protection{}
	}
	r.protection[branch] = p
}

// Labels are the labels of issue or pull request number.
func (s *Server) Labels(owner, name string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.repo(owner, name).issues[number]
	if rec == nil {
		return nil
	}
	return slices.Clone(rec.Labels)
}

// protection serves a branch's required checks, from classic protection
// (branches/B/protection/required_status_checks) or its rulesets
// (rules/branches/B).
func (s *Server) protection(req *http.Request, r *repo, rest []string) answer {
	const suffix = "/protection/required_status_checks"
	path := strings.Join(rest, "/")
	switch {
	case req.Method != http.MethodGet:
	case rest[0] == "branches" && strings.HasSuffix(path, suffix):
		return s.requiredChecks(r, strings.TrimSuffix(strings.TrimPrefix(path, "branches/"), suffix))
	case rest[0] == "rules" && len(rest) >= 3 && rest[1] == "branches":
		return s.branchRules(r, strings.Join(rest[2:], "/"))
	}
	return notFound()
}

func (s *Server) requiredChecks(r *repo, branch string) answer {
	p, ok := r.protection[branch]
	switch {
	case ok && p.Hidden:
		return msg(http.StatusForbidden, "Resource not accessible by integration", "/branches/branch-protection#get-status-checks-protection")
	case !ok || len(p.Contexts) == 0:
		return msg(http.StatusNotFound, "Branch not protected", "/branches/branch-protection#get-status-checks-protection")
	}
	checks := mapSlice(p.Contexts, func(c string) any { return map[string]any{"context": c, "app_id": nil} })
	return answer{status: http.StatusOK, body: map[string]any{"strict": false, "contexts": p.Contexts, "checks": checks,
		"url":          s.srv.URL + "/repos/" + r.owner + "/" + r.name + "/branches/" + branch + "/protection/required_status_checks",
		"contexts_url": s.srv.URL + "/repos/" + r.owner + "/" + r.name + "/branches/" + branch + "/protection/required_status_checks/contexts"}}
}

func (s *Server) branchRules(r *repo, branch string) answer {
	rules := []any{}
	if p, ok := r.protection[branch]; ok && len(p.Rules) > 0 {
		checks := mapSlice(p.Rules, func(c string) any { return map[string]any{"context": c, "integration_id": 15368} })
		rules = append(rules, map[string]any{"type": "required_status_checks", "ruleset_source_type": "Repository",
			"ruleset_source": r.owner + "/" + r.name, "ruleset_id": 42,
			"parameters": map[string]any{"strict_required_status_checks_policy": false, "do_not_enforce_on_create": false,
				"required_status_checks": checks}})
	}
	return answer{status: http.StatusOK, body: rules}
}

// required are the checks base requires, whether readable or not.
func (r *repo) required(base string) []string {
	p := r.protection[base]
	return append(slices.Clone(p.Contexts), p.Rules...)
}

// requiredMet reports whether every check base requires succeeded on sha.
func requiredMet(r *repo, base, sha string) bool {
	for _, name := range r.required(base) {
		ok := slices.ContainsFunc(r.checkRuns[sha], func(cr CheckRun) bool {
			return cr.Name == name && cr.Status == "completed" && slices.Contains([]string{"success", "neutral", "skipped"}, cr.Conclusion)
		}) || slices.ContainsFunc(r.statuses[sha], func(st Status) bool { return st.Context == name && st.State == "success" })
		if !ok {
			return false
		}
	}
	return true
}

// removeLabel takes the label the path's last segment names off rec: 404
// when it has none such, as GitHub answers.
func (s *Server) removeLabel(rec *record, req *http.Request) answer {
	esc := req.URL.EscapedPath()
	name, err := url.PathUnescape(esc[strings.LastIndex(esc, "/")+1:])
	i := slices.Index(rec.Labels, name)
	if err != nil || i < 0 {
		return msg(http.StatusNotFound, "Label does not exist", "/issues/labels#remove-a-label-from-an-issue")
	}
	rec.Labels = slices.Delete(rec.Labels, i, i+1)
	rec.touch()
	return answer{status: http.StatusOK, body: labelsJSON(rec.Labels)}
}
