package forgetest

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// SetGitDir backs owner/repo with the bare git repository at dir (see
// GitRepo): a pull request's head.sha and base.sha are then its branches'
// commits there, it is mergeable when its head merges into its base
// without conflict (git merge-tree), and merging it really moves the base
// branch.
func (s *Server) SetGitDir(owner, name, dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repo(owner, name).gitDir = dir
}

// SetComputing makes the next times fetches of pull request number answer
// mergeable null and mergeable_state "unknown", as GitHub does while it
// computes the merge after a push; a merge meanwhile is refused.
func (s *Server) SetComputing(owner, name string, number, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, rec := s.pull(owner, name, number, "SetComputing")
	rec.computing = times
}

// touch notes a change to the record: its updated_at moves on.
func (rec *record) touch() { rec.changes = int(clock.Add(1)) }

// clock orders every change the fakes make, so updated_at is later for a
// later change whatever the record, as on GitHub.
var clock atomic.Int64

// notePush moves an open pull request's update time when its head moved
// since it was last served, as a push to its branch does on GitHub (a
// push to the base does not).
func (s *Server) notePush(r *repo, rec *record) {
	if rec.pr == nil || rec.pr.State != "open" {
		return
	}
	head := s.headSHA(r, rec.pr)
	if rec.head != "" && rec.head != head {
		rec.touch()
	}
	rec.head = head
}

func (rec *record) updatedAt() string {
	return time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC).Add(time.Duration(rec.changes) * time.Second).Format(time.RFC3339)
}

// headSHA is the commit the pull request's head is at: the branch's in
// the git directory while open, the one it was merged at after, the one
// it was added with, or one made up from the branch's name.
func (s *Server) headSHA(r *repo, p *PR) string {
	if !p.Merged && p.Owner == r.owner {
		if sha, ok := r.rev(p.Head); ok {
			return sha
		}
	}
	if p.HeadSHA != "" {
		return p.HeadSHA
	}
	return fmt.Sprintf("%040x", len(p.Head))
}

func (s *Server) baseSHA(r *repo, p *PR) string {
	if sha, ok := r.rev(p.Base); ok {
		return sha
	}
	return fmt.Sprintf("%040x", len(p.Base))
}

// mergeability is what GitHub says of an open pull request's merge:
// whether it merges without conflict (nil while computing), and
// mergeable_state, the first that holds of dirty (conflicts), draft,
// blocked (a reviewer's latest verdict requests changes, as a protected
// base branch requires, or a check the base requires has not succeeded), unstable (a check or status of the head has
// failed or is pending) and clean. A closed one is null and "unknown".
func (s *Server) mergeability(r *repo, rec *record) (*bool, string) {
	p := rec.pr
	if p.State != "open" || rec.computing > 0 {
		return nil, "unknown"
	}
	yes, no := true, false
	if r.gitDir != "" {
		base, ok1 := r.rev(p.Base)
		head, ok2 := r.rev(p.Head)
		if !ok1 || !ok2 {
			return nil, "unknown"
		}
		if _, err := r.mergeTree(base, head); errors.Is(err, errConflict) {
			return &no, "dirty"
		} else if err != nil {
			return nil, "unknown"
		}
	}
	switch {
	case p.Draft:
		return &yes, "draft"
	case changesRequested(rec.reviews) || !requiredMet(r, p.Base, s.headSHA(r, p)):
		return &yes, "blocked"
	case !green(r, s.headSHA(r, p)):
		return &yes, "unstable"
	}
	return &yes, "clean"
}

// changesRequested reports whether a reviewer's latest verdict (approval,
// change request or dismissal; comments are no verdict) requests changes.
func changesRequested(reviews []Review) bool {
	latest := map[string]string{}
	for _, rv := range reviews {
		switch rv.State {
		case "APPROVED", "CHANGES_REQUESTED", "DISMISSED":
			latest[rv.Author] = rv.State
		}
	}
	for _, st := range latest {
		if st == "CHANGES_REQUESTED" {
			return true
		}
	}
	return false
}

// green reports whether every check run and status of commit sha passed.
func green(r *repo, sha string) bool {
	for _, cr := range r.checkRuns[sha] {
		if cr.Status != "completed" || (cr.Conclusion != "success" && cr.Conclusion != "neutral" && cr.Conclusion != "skipped") {
			return false
		}
	}
	for _, st := range r.statuses[sha] {
		if st.State != "success" {
			return false
		}
	}
	return true
}

// getPR serves one pull request, spending one of the fetches it is
// "computing" for.
func (s *Server) getPR(r *repo, rec *record) answer {
	a := answer{status: http.StatusOK, body: s.prJSON(r, rec, true)}
	rec.computing = max(rec.computing-1, 0)
	return a
}

func notMergeable(m string) answer {
	return msg(http.StatusMethodNotAllowed, m, "/pulls/pulls#merge-a-pull-request")
}

// merge merges an open, mergeable pull request whose head is sha (when
// given) by merge_method, as GitHub's merge button does: 405 when it
// cannot be merged, 409 when its head moved.
func (s *Server) merge(r *repo, rec *record, body []byte) answer {
	var in struct {
		Method  string `json:"merge_method"`
		SHA     string `json:"sha"`
		Title   string `json:"commit_title"`
		Message string `json:"commit_message"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return msg(http.StatusBadRequest, "Problems parsing JSON", "")
	}
	switch in.Method {
	case "":
		in.Method = "merge"
	case "merge", "squash", "rebase":
	default:
		return validation("PullRequest", "invalid", "merge_method", "")
	}
	p := rec.pr
	if p.State != "open" {
		return notMergeable("Pull Request is not mergeable")
	}
	head := s.headSHA(r, p)
	if in.SHA != "" && in.SHA != head {
		return msg(http.StatusConflict, "Head branch was modified. Review and try the merge again.", "/pulls/pulls#merge-a-pull-request")
	}
	switch m, state := s.mergeability(r, rec); {
	case state == "draft":
		return notMergeable("Pull Request is still a draft")
	case m == nil || !*m || state == "blocked":
		return notMergeable("Pull Request is not mergeable")
	}
	sha := fakeSHA(fmt.Sprintf("merge %s/%s#%d %s", r.owner, r.name, p.Number, head))
	if r.gitDir != "" {
		var err error
		if sha, err = s.gitMerge(r, rec, in.Method, in.Title, in.Message); errors.Is(err, errBaseMoved) || errors.Is(err, errConflict) {
			return notMergeable("Base branch was modified. Review and try the merge again.")
		} else if err != nil {
			return msg(http.StatusInternalServerError, "fake: "+err.Error(), "")
		}
	}
	p.State, p.Merged, rec.State = "closed", true, "closed"
	p.HeadSHA, p.MergeCommit = head, sha
	rec.touch()
	if a, lost := s.lostAfterWrite(Merge); lost {
		return a
	}
	return answer{status: http.StatusOK, body: map[string]any{"sha": sha, "merged": true, "message": "Pull Request successfully merged"}}
}

func fakeSHA(seed string) string {
	sum := sha1.Sum([]byte(seed))
	return hex.EncodeToString(sum[:])
}

var errBaseMoved = errors.New("base branch moved")

// gitMerge makes the commit method makes of the pull request on its base
// branch and moves the branch to it: a merge commit of base and head, or
// (squash and rebase) one commit on base holding the merged tree. Rebase
// keeps the head commit's message and author: exact for a branch of one
// commit, which is what a fake needs.
func (s *Server) gitMerge(r *repo, rec *record, method, title, message string) (string, error) {
	p := rec.pr
	base, ok1 := r.rev(p.Base)
	head, ok2 := r.rev(p.Head)
	if !ok1 || !ok2 {
		return "", fmt.Errorf("branch %s or %s missing", p.Base, p.Head)
	}
	tree, err := r.mergeTree(base, head)
	if err != nil {
		return "", err
	}
	env := []string{"GIT_AUTHOR_NAME=" + s.Login, "GIT_AUTHOR_EMAIL=" + s.Login + "@users.noreply.github.com",
		"GIT_COMMITTER_NAME=GitHub", "GIT_COMMITTER_EMAIL=noreply@github.com"}
	parents := []string{"-p", base}
	var text string
	switch method {
	case "merge":
		parents = append(parents, "-p", head)
		text = fmt.Sprintf("Merge pull request #%d from %s/%s", p.Number, p.Owner, p.Head)
		text = commitText(title, text, message, p.Title)
	case "squash":
		text = commitText(title, fmt.Sprintf("%s (#%d)", p.Title, p.Number), message, p.Body)
	case "rebase":
		info, err := git(r.gitDir, nil, "", "log", "-1", "--format=%an%x00%ae%x00%aI%x00%B", head)
		if err != nil {
			return "", err
		}
		f := strings.SplitN(info, "\x00", 4)
		if len(f) < 4 {
			return "", fmt.Errorf("cannot read commit %s", head)
		}
		env[0], env[1] = "GIT_AUTHOR_NAME="+f[0], "GIT_AUTHOR_EMAIL="+f[1]
		env = append(env, "GIT_AUTHOR_DATE="+f[2])
		text = f[3]
	}
	sha, err := git(r.gitDir, env, text, append([]string{"commit-tree", "--no-gpg-sign", tree}, parents...)...)
	if err != nil {
		return "", err
	}
	if _, err := git(r.gitDir, nil, "", "update-ref", "refs/heads/"+p.Base, sha, base); err != nil {
		return "", fmt.Errorf("%w: %w", errBaseMoved, err)
	}
	r.refs = nil // the base moved
	return sha, nil
}

// commitText is a commit message of title (def when "") and body (defBody
// when message is "").
func commitText(title, def, message, defBody string) string {
	if title == "" {
		title = def
	}
	if message == "" {
		message = defBody
	}
	if message == "" {
		return title + "\n"
	}
	return title + "\n\n" + message + "\n"
}
