package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
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
	Action     string `json:"action"`
	Number     int    `json:"number"`
	Ref        string `json:"ref"`   // push
	After      string `json:"after"` // push
	SHA        string `json:"sha"`   // status
	State      string `json:"state"` // status
	Repository struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Issue *struct {
		Number int       `json:"number"`
		Labels []ghLabel `json:"labels"`
	} `json:"issue"`
	Label       *ghLabel `json:"label"`
	PullRequest *struct {
		Number int  `json:"number"`
		Merged bool `json:"merged"`
		Head   struct {
			SHA string `json:"sha"`
		} `json:"head"`
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
	HeadSHA      string `json:"head_sha"`
	Conclusion   string `json:"conclusion"`
	PullRequests []struct {
		Number int `json:"number"`
	} `json:"pull_requests"`
}

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
		c := map[string]*ghCheck{"check_run": p.CheckRun, "check_suite": p.CheckSuite, "workflow_job": p.WorkflowJob}[kind]
		if c == nil || p.Action != "completed" {
			return ev, false, nil
		}
		ev.Head, ev.State = c.HeadSHA, c.Conclusion
		if len(c.PullRequests) > 0 {
			ev.PR = c.PullRequests[0].Number
		}
		return ev, true, nil
	case "status":
		// Pending says nothing cadre acts on; the end of the check does.
		ev.Action, ev.Head, ev.State = p.State, p.SHA, p.State
		return ev, p.State != "pending" && p.SHA != "", nil
	case "pull_request", "pull_request_review", "pull_request_review_comment":
		return ghPull(ev, p)
	case "push":
		ev.Head = p.After
		return ev, base != "" && p.Ref == "refs/heads/"+base, nil
	}
	return ev, false, nil
}

// ghPull reads the pull request events: closed (merged or not) and
// synchronize; a review submitted; a review comment created.
func ghPull(ev Event, p ghPayload) (Event, bool, error) {
	if p.PullRequest == nil {
		return ev, false, nil
	}
	ev.PR, ev.Head = p.PullRequest.Number, p.PullRequest.Head.SHA
	switch ev.Kind {
	case "pull_request":
		if p.Action == "closed" {
			ev.State = "closed"
			if p.PullRequest.Merged {
				ev.State = "merged"
			}
		}
		return ev, oneOf(p.Action, "closed", "synchronize"), nil
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
