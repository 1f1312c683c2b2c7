package forgetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// Review is a review of a pull request.
type Review struct {
	ID          int64  // 0 takes the next free id
	Author      string // "" = octocat
	Association string // author_association: OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, NONE…; "" = CONTRIBUTOR
	// State is APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED or
	// PENDING (not submitted: listed to its author only).
	State       string
	Body        string
	CommitID    string    // "" = the pull request's head commit when added
	SubmittedAt time.Time // zero = a time after that of every earlier id
}

// ReviewComment is a comment on a line of a pull request's diff.
type ReviewComment struct {
	ID int64 // 0 takes the next free id
	// ReviewID is the review the comment belongs to; 0 makes a COMMENTED
	// review by the same author for it, as GitHub does for a lone comment.
	ReviewID    int64
	InReplyTo   int64  // the comment opening the thread it answers; 0 when it opens one
	Author      string // "" = octocat
	Association string // "" = CONTRIBUTOR
	Path        string
	Line        int // 0 = null: the comment is outdated, its line gone from the diff
	Body        string
	CommitID    string    // "" = the pull request's head commit when added
	CreatedAt   time.Time // zero = a time after that of every earlier id
}

// at is the time of a review or comment with id when none was given:
// later ids are later.
func at(t time.Time, id int64) time.Time {
	if !t.IsZero() {
		return t.UTC()
	}
	return time.Date(2024, 1, 5, 0, 0, 0, 0, time.UTC).Add(time.Duration(id) * time.Minute)
}

func (s *Server) pull(owner, name string, number int, helper string) (*repo, *record) {
	r := s.repo(owner, name)
	rec := r.issues[number]
	if rec == nil || rec.pr == nil {
		s.t.Fatalf("forgetest: %s: no pull request %s/%s#%d", helper, owner, name, number)
	}
	return r, rec
}

// AddReview adds rv to pull request number and returns its id. A review
// takes its author off the requested reviewers, as on GitHub.
func (s *Server) AddReview(owner, name string, number int, rv Review) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, rec := s.pull(owner, name, number, "AddReview")
	return s.addReview(r, rec, rv)
}

func (s *Server) addReview(r *repo, rec *record, rv Review) int64 {
	if rv.ID == 0 {
		s.ids++
		rv.ID = s.ids
	}
	if rv.Author == "" {
		rv.Author = "octocat"
	}
	if rv.Association == "" {
		rv.Association = "CONTRIBUTOR"
	}
	if rv.CommitID == "" {
		rv.CommitID = s.headSHA(r, rec.pr)
	}
	rv.SubmittedAt = at(rv.SubmittedAt, rv.ID)
	rec.reviews = append(rec.reviews, rv)
	if rv.State != "PENDING" {
		rec.requested = slices.DeleteFunc(rec.requested, func(l string) bool { return l == rv.Author })
	}
	rec.touch()
	return rv.ID
}

// AddReviewComment adds c to pull request number and returns its id.
func (s *Server) AddReviewComment(owner, name string, number int, c ReviewComment) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, rec := s.pull(owner, name, number, "AddReviewComment")
	return s.addReviewComment(r, rec, c).ID
}

func (s *Server) addReviewComment(r *repo, rec *record, c ReviewComment) ReviewComment {
	if c.Author == "" {
		c.Author = "octocat"
	}
	if c.Association == "" {
		c.Association = "CONTRIBUTOR"
	}
	if c.CommitID == "" {
		c.CommitID = s.headSHA(r, rec.pr)
	}
	if c.ReviewID == 0 {
		c.ReviewID = s.addReview(r, rec, Review{Author: c.Author, Association: c.Association, State: "COMMENTED", CommitID: c.CommitID})
	}
	if c.ID == 0 {
		s.ids++
		c.ID = s.ids
	}
	c.CreatedAt = at(c.CreatedAt, c.ID)
	rec.reviewComments = append(rec.reviewComments, c)
	rec.touch()
	return c
}

// ReviewComments returns the review comments of pull request number,
// replies included, oldest first.
func (s *Server) ReviewComments(owner, name string, number int) []ReviewComment {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, rec := s.pull(owner, name, number, "ReviewComments")
	return slices.Clone(rec.reviewComments)
}

// Reviews returns the reviews of pull request number, oldest first.
func (s *Server) Reviews(owner, name string, number int) []Review {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, rec := s.pull(owner, name, number, "Reviews")
	return slices.Clone(rec.reviews)
}

// RequestedReviewers returns the logins whose review of pull request
// number is requested and not yet given.
func (s *Server) RequestedReviewers(owner, name string, number int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, rec := s.pull(owner, name, number, "RequestedReviewers")
	return slices.Clone(rec.requested)
}

func (s *Server) listReviews(req *http.Request, r *repo, rec *record, q url.Values) answer {
	var out []any
	for _, rv := range rec.reviews {
		if rv.State == "PENDING" && rv.Author != s.Login {
			continue
		}
		out = append(out, s.reviewJSON(r, rec, rv))
	}
	return s.page(req, q, out)
}

func (s *Server) reviewJSON(r *repo, rec *record, rv Review) map[string]any {
	page := fmt.Sprintf("%s#pullrequestreview-%d", htmlURL(r, "pull", rec.Number), rv.ID)
	j := map[string]any{
		"id": rv.ID, "node_id": fmt.Sprintf("PRR_%d", rv.ID), "user": user(rv.Author), "body": rv.Body,
		"state": rv.State, "html_url": page, "pull_request_url": s.api(r, "pulls", rec.Number),
		"author_association": rv.Association, "commit_id": rv.CommitID,
		"_links": map[string]any{"html": map[string]any{"href": page}, "pull_request": map[string]any{"href": s.api(r, "pulls", rec.Number)}},
	}
	if rv.State != "PENDING" {
		j["submitted_at"] = rv.SubmittedAt.Format(time.RFC3339)
	}
	return j
}

func (s *Server) reviewCommentJSON(r *repo, rec *record, c ReviewComment) map[string]any {
	self := fmt.Sprintf("%s/repos/%s/%s/pulls/comments/%d", s.srv.URL, r.owner, r.name, c.ID)
	page := fmt.Sprintf("%s#discussion_r%d", htmlURL(r, "pull", rec.Number), c.ID)
	var line, position any
	if c.Line > 0 {
		line, position = c.Line, c.Line
	}
	j := map[string]any{
		"url": self, "id": c.ID, "node_id": fmt.Sprintf("PRRC_%d", c.ID), "pull_request_review_id": c.ReviewID,
		"diff_hunk": "@@ -1,1 +1,1 @@", "path": c.Path, "position": position, "original_position": c.Line,
		"commit_id": c.CommitID, "original_commit_id": c.CommitID, "user": user(c.Author), "body": c.Body,
		"created_at": c.CreatedAt.Format(time.RFC3339), "updated_at": c.CreatedAt.Format(time.RFC3339),
		"html_url": page, "pull_request_url": s.api(r, "pulls", rec.Number), "author_association": c.Association,
		"_links": map[string]any{"self": map[string]any{"href": self}, "html": map[string]any{"href": page},
			"pull_request": map[string]any{"href": s.api(r, "pulls", rec.Number)}},
		"start_line": nil, "original_start_line": nil, "start_side": nil,
		"line": line, "original_line": c.Line, "side": "RIGHT", "subject_type": "line",
	}
	if c.InReplyTo != 0 {
		j["in_reply_to_id"] = c.InReplyTo
	}
	return j
}

// reply answers the review comment id of the pull request with body, in
// its thread: GitHub threads every reply under the comment that opened
// the thread, and files it in a COMMENTED review of its own.
func (s *Server) reply(r *repo, rec *record, id int64, body []byte) answer {
	var in struct {
		Body *string `json:"body"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return msg(http.StatusBadRequest, "Problems parsing JSON", "")
	}
	if in.Body == nil || *in.Body == "" {
		return validation("PullRequestReviewComment", "missing_field", "body", "")
	}
	i := slices.IndexFunc(rec.reviewComments, func(c ReviewComment) bool { return c.ID == id })
	if i < 0 {
		return notFound()
	}
	to := rec.reviewComments[i]
	root := to.ID
	if to.InReplyTo != 0 {
		root = to.InReplyTo
	}
	c := s.addReviewComment(r, rec, ReviewComment{InReplyTo: root, Author: s.Login, Path: to.Path, Line: to.Line,
		Body: *in.Body, CommitID: to.CommitID})
	if a, lost := s.lostAfterWrite(CreateReply); lost {
		return a
	}
	return answer{status: http.StatusCreated, body: s.reviewCommentJSON(r, rec, c)}
}

// createReviewComment serves the older way to reply, a new comment naming
// in_reply_to; a comment opening a thread is not served.
func (s *Server) createReviewComment(r *repo, rec *record, body []byte) answer {
	var in struct {
		InReplyTo int64 `json:"in_reply_to"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return msg(http.StatusBadRequest, "Problems parsing JSON", "")
	}
	if in.InReplyTo == 0 {
		return validation("PullRequestReviewComment", "missing_field", "commit_id", "")
	}
	return s.reply(r, rec, in.InReplyTo, body)
}

// requestReviewers adds reviewers to those requested; GitHub refuses the
// pull request's author.
func (s *Server) requestReviewers(r *repo, rec *record, body []byte) answer {
	var in struct {
		Reviewers     []string `json:"reviewers"`
		TeamReviewers []string `json:"team_reviewers"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return msg(http.StatusBadRequest, "Problems parsing JSON", "")
	}
	if slices.Contains(in.Reviewers, rec.pr.Author) {
		return validation("PullRequest", "custom", "", "Review cannot be requested from pull request author.")
	}
	for _, l := range in.Reviewers {
		if !slices.Contains(rec.requested, l) {
			rec.requested = append(rec.requested, l)
		}
	}
	rec.touch()
	return answer{status: http.StatusCreated, body: s.prJSON(r, rec, false)}
}

func requestedJSON(logins []string) []any {
	return mapSlice(logins, func(l string) any { return user(l) })
}

// reviewCommentID reads a comment id from a path.
func reviewCommentID(s string) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}
