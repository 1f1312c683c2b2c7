package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// verifyGitHub says whether sig ("sha256=<hex>") is the HMAC-SHA256 of
// body under secret, compared in constant time.
func verifyGitHub(secret []byte, sig string, body []byte) bool {
	hexSum, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// Sign is the X-Hub-Signature-256 GitHub sends with body under secret.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// ghPayload holds the fields of GitHub's payloads cadre reads; the rest
// is not decoded.
type ghPayload struct {
	Action      string  `json:"action"`
	Number      int     `json:"number"`
	Ref         string  `json:"ref"`         // push
	After       string  `json:"after"`       // push
	ID          int64   `json:"id"`          // status
	SHA         string  `json:"sha"`         // status
	State       string  `json:"state"`       // status
	Context     string  `json:"context"`     // status
	Description *string `json:"description"` // status
	TargetURL   *string `json:"target_url"`  // status
	Repository  struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Issue *struct {
		Number int       `json:"number"`
		Labels []ghLabel `json:"labels"`
	} `json:"issue"`
	Label       *ghLabel `json:"label"`
	PullRequest *struct {
		Number    int       `json:"number"`
		State     string    `json:"state"`
		Merged    bool      `json:"merged"`
		Title     string    `json:"title"`
		UpdatedAt time.Time `json:"updated_at"`
		Head      struct {
			SHA string `json:"sha"`
		} `json:"head"`
		Base struct {
			Ref string `json:"ref"`
		} `json:"base"`
	} `json:"pull_request"`
	CheckRun    *ghCheck `json:"check_run"`
	CheckSuite  *ghCheck `json:"check_suite"`
	WorkflowJob *ghCheck `json:"workflow_job"`
	Review      *struct {
		State string `json:"state"`
	} `json:"review"`
}

type ghLabel struct {
	Name string `json:"name"`
}

// ghCheck is a check run's, check suite's or workflow job's part.
type ghCheck struct {
	ID           int64   `json:"id"`
	Name         string  `json:"name"`
	HeadSHA      string  `json:"head_sha"`
	Status       string  `json:"status"`
	Conclusion   *string `json:"conclusion"`
	DetailsURL   string  `json:"details_url"`
	HTMLURL      string  `json:"html_url"` // a workflow job's
	PullRequests []struct {
		Number int `json:"number"`
	} `json:"pull_requests"`
	Output struct {
		Title   *string `json:"title"`
		Summary *string `json:"summary"`
		Text    *string `json:"text"`
	} `json:"output"`
	App *struct {
		Slug string `json:"slug"`
	} `json:"app"`
}

// actionsApp is the app of GitHub Actions' check runs; a workflow job is
// one of its check runs, with the same id.
const actionsApp = "github-actions"

// parseGitHub reads a GitHub event named kind (X-GitHub-Event); ok is
// false for one cadre does not act on.
func parseGitHub(kind string, body []byte, base string) (Event, bool, error) {
	var p ghPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return Event{}, false, err
	}
	ev := Event{Kind: kind, Action: p.Action, Repo: p.Repository.FullName}
	switch kind {
	case "issues":
		if p.Issue == nil || !oneOf(p.Action, "opened", "labeled", "assigned") {
			return ev, false, nil
		}
		ev.Issue = p.Issue.Number
		for _, l := range p.Issue.Labels {
			ev.Labels = append(ev.Labels, l.Name)
		}
		if p.Label != nil && !slices.Contains(ev.Labels, p.Label.Name) {
			ev.Labels = append(ev.Labels, p.Label.Name)
		}
		return ev, true, nil
	case "check_run", "check_suite", "workflow_job":
		return ghChecks(ev, p)
	case "status":
		ev.Action, ev.Head, ev.State = p.State, p.SHA, p.State
		ev.Check = &Check{ID: p.ID, Name: p.Context, Status: p.State, Conclusion: p.State, Title: deref(p.Description), URL: deref(p.TargetURL)}
		return ev, p.SHA != "" && p.Context != "", nil
	case "pull_request", "pull_request_review", "pull_request_review_comment":
		return ghPull(ev, p)
	case "push":
		ev.Head = p.After
		return ev, base != "" && p.Ref == "refs/heads/"+base, nil
	}
	return ev, false, nil
}

// ghChecks reads a check run's or workflow job's start and end (a
// start tells the head's checks are running), and a check suite's end.
func ghChecks(ev Event, p ghPayload) (Event, bool, error) {
	c := map[string]*ghCheck{"check_run": p.CheckRun, "check_suite": p.CheckSuite, "workflow_job": p.WorkflowJob}[ev.Kind]
	if c == nil {
		return ev, false, nil
	}
	ev.Head, ev.State = c.HeadSHA, deref(c.Conclusion)
	if len(c.PullRequests) > 0 {
		ev.PR = c.PullRequests[0].Number
	}
	switch ev.Kind {
	case "check_suite":
		return ev, p.Action == "completed", nil
	case "check_run":
		ev.Check = &Check{ID: c.ID, Name: c.Name, Status: c.Status, Conclusion: deref(c.Conclusion), URL: c.DetailsURL,
			Title: deref(c.Output.Title), Summary: deref(c.Output.Summary), Text: deref(c.Output.Text)}
		if c.App != nil {
			ev.Check.App = c.App.Slug
		}
		return ev, oneOf(p.Action, "created", "completed"), nil
	}
	ev.Check = &Check{ID: c.ID, Name: c.Name, Status: c.Status, Conclusion: deref(c.Conclusion), URL: c.HTMLURL, App: actionsApp}
	return ev, oneOf(p.Action, "queued", "completed"), nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ghPull reads the pull request events: closed (merged or not) and
// synchronize; a review submitted; a review comment created.
func ghPull(ev Event, p ghPayload) (Event, bool, error) {
	if p.PullRequest == nil {
		return ev, false, nil
	}
	pr := p.PullRequest
	ev.PR, ev.Head = pr.Number, pr.Head.SHA
	switch ev.Kind {
	case "pull_request":
		if p.Action == "closed" {
			ev.State = "closed"
			if pr.Merged {
				ev.State = "merged"
			}
		}
		ev.Pull = &Pull{State: pr.State, Merged: pr.Merged, Head: pr.Head.SHA, Base: pr.Base.Ref, Title: pr.Title, Updated: pr.UpdatedAt}
		return ev, oneOf(p.Action, "closed", "synchronize", "reopened", "edited"), nil
	case "pull_request_review":
		if p.Review != nil {
			ev.State = strings.ToLower(p.Review.State)
		}
		return ev, p.Action == "submitted", nil
	}
	return ev, p.Action == "created", nil
}

func oneOf(s string, set ...string) bool { return slices.Contains(set, s) }

// sameRepo compares repository names as the forges do, ignoring case.
func sameRepo(a, b string) bool { return strings.EqualFold(a, b) }
