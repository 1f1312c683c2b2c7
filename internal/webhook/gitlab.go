package webhook

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"slices"
)

// verifyGitLab compares X-Gitlab-Token with the secret in constant time;
// hashed first, so that not even the secret's length shows in the time.
func verifyGitLab(secret []byte, token string) bool {
	if token == "" {
		return false
	}
	a, b := sha256.Sum256(secret), sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// gitlabDelivery is the delivery's id: the Idempotency-Key GitLab 17.4
// and later send, which a retry and a resend keep; else the event's UUID
// older GitLabs send (new at each sending, and shared by the deliveries
// of one request a webhook's receiver made).
func gitlabDelivery(h http.Header) string {
	if id := h.Get("Idempotency-Key"); id != "" {
		return id
	}
	return h.Get("X-Gitlab-Event-UUID")
}

// glPayload holds the fields of GitLab's payloads cadre reads.
type glPayload struct {
	ObjectKind string `json:"object_kind"`
	Ref        string `json:"ref"`          // push, job
	After      string `json:"after"`        // push
	SHA        string `json:"sha"`          // job
	BuildState string `json:"build_status"` // job
	Project    struct {
		Path string `json:"path_with_namespace"`
	} `json:"project"`
	Attrs struct {
		IID          int    `json:"iid"`
		Action       string `json:"action"`
		State        string `json:"state"`
		Status       string `json:"status"` // pipeline
		SHA          string `json:"sha"`    // pipeline
		NoteableType string `json:"noteable_type"`
		LastCommit   struct {
			ID string `json:"id"`
		} `json:"last_commit"`
	} `json:"object_attributes"`
	MergeRequest *struct {
		IID        int `json:"iid"`
		LastCommit struct {
			ID string `json:"id"`
		} `json:"last_commit"`
	} `json:"merge_request"`
	Labels []struct {
		Title string `json:"title"`
	} `json:"labels"`
}

// finished are the states a GitLab pipeline or job ends in.
var finished = []string{"success", "failed", "canceled", "skipped"}

// parseGitLab reads a GitLab event named kind (X-Gitlab-Event); ok is
// false for one cadre does not act on.
func parseGitLab(kind string, body []byte, base string) (Event, bool, error) {
	var p glPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return Event{}, false, err
	}
	ev := Event{Repo: p.Project.Path, Action: p.Attrs.Action}
	switch kind {
	case "Issue Hook", "Confidential Issue Hook":
		ev.Kind, ev.Issue = "issue", p.Attrs.IID
		for _, l := range p.Labels {
			ev.Labels = append(ev.Labels, l.Title)
		}
		return ev, oneOf(p.Attrs.Action, "open", "reopen", "update"), nil
	case "Pipeline Hook":
		ev.Kind, ev.Action, ev.State, ev.Head = "pipeline", p.Attrs.Status, p.Attrs.Status, p.Attrs.SHA
		if p.MergeRequest != nil {
			ev.PR = p.MergeRequest.IID
		}
		return ev, slices.Contains(finished, p.Attrs.Status), nil
	case "Job Hook":
		ev.Kind, ev.Action, ev.State, ev.Head = "job", p.BuildState, p.BuildState, p.SHA
		return ev, slices.Contains(finished, p.BuildState), nil
	case "Note Hook", "Confidential Note Hook":
		ev.Kind = "note"
		if p.Attrs.NoteableType != "MergeRequest" || p.MergeRequest == nil {
			return ev, false, nil
		}
		ev.PR, ev.Head = p.MergeRequest.IID, p.MergeRequest.LastCommit.ID
		return ev, true, nil
	case "Merge Request Hook":
		ev.Kind, ev.PR, ev.Head, ev.State = "merge_request", p.Attrs.IID, p.Attrs.LastCommit.ID, p.Attrs.State
		return ev, oneOf(p.Attrs.Action, "approved", "approval", "merge", "close", "update"), nil
	case "Push Hook":
		ev.Kind, ev.Head = "push", p.After
		return ev, base != "" && p.Ref == "refs/heads/"+base, nil
	}
	ev.Kind = kind
	return ev, false, nil
}
