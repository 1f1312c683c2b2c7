// Package codehost is the code host as cadre's engine sees it: issues
// in; branches, pull requests and progress comments out. Forge is the
// interface the engine and item intake call; internal/app implements it
// on GitHub (app.GitHub, built on internal/forge), so neither knows
// GitHub's API, and the token stays where the implementation keeps it.
package codehost

import (
	"context"
	"fmt"
	"strings"
)

// Issue is a work item from a code host, as the engine needs it.
type Issue struct {
	Repo   string // owner/repo; "" for a tracker's issue (the forge's own repository)
	Number int    // for a tracker's issue, the number in its key
	// Key is a tracker's key for its issue ("PROJ-123" in Jira, "ENG-42"
	// in Linear); "" for a forge's issue.
	Key    string
	Title  string
	Body   string // body and comments: untrusted text
	URL    string
	Author string
	Labels []string
}

// Credentialed is a Forge whose credential may come late, from a helper
// (gh auth token) on first use. LearnCredential resolves it now, so that
// it is masked in what an issue item's agents print before the code host
// is first called (as on a resume, or on a worker).
type Credentialed interface {
	LearnCredential(ctx context.Context) error
}

// Forge is the code host: issues in, branches, pull requests and progress
// comments out. Every mutating call must be idempotent by its key (the
// head branch for a pull request, the marker for a comment), so a resumed
// run never makes a second one.
type Forge interface {
	// Issue fetches one issue by reference ("42", "#42", "owner/repo#42").
	Issue(ctx context.Context, ref string) (Issue, error)
	// Issues lists the repository's issues matching q.
	Issues(ctx context.Context, q IssueQuery) ([]Issue, error)
	// Push publishes the item's branch from its worktree.
	Push(ctx context.Context, dir, branch string) error
	// EnsurePR opens the pull request for head, or adopts and updates the
	// one that exists; it returns its URL and number.
	EnsurePR(ctx context.Context, pr PullRequest) (url string, number int, err error)
	// EnsureComment posts body on the issue once per marker.
	EnsureComment(ctx context.Context, repo string, issue int, marker, body string) error
}

// IssueQuery selects issues to work on (cadre run --label ...).
type IssueQuery struct {
	Labels    []string `json:"labels,omitempty"`
	Milestone string   `json:"milestone,omitempty"`
	Assignee  string   `json:"assignee,omitempty"`
	State     string   `json:"state,omitempty"`
	Limit     int      `json:"limit,omitempty"`
}

// String describes the query for a person: "labels bug, p1; state open".
func (q IssueQuery) String() string {
	var parts []string
	if len(q.Labels) > 0 {
		parts = append(parts, "labels "+strings.Join(q.Labels, ", "))
	}
	for _, p := range []struct{ name, v string }{{"milestone", q.Milestone}, {"assignee", q.Assignee}, {"state", q.State}} {
		if p.v != "" {
			parts = append(parts, p.name+" "+p.v)
		}
	}
	if q.Limit > 0 {
		parts = append(parts, fmt.Sprintf("at most %d", q.Limit))
	}
	return strings.Join(parts, "; ")
}

// Empty says whether the query selects nothing by itself.
func (q IssueQuery) Empty() bool {
	return len(q.Labels) == 0 && q.Milestone == "" && q.Assignee == "" && q.State == "" && q.Limit == 0
}

// PullRequest is what EnsurePR opens.
type PullRequest struct {
	Repo, Head, Base, Title, Body string
	Issue                         int
	Draft                         bool
	Labels                        []string
}

// PRStatus is where a pull request stands, as cadre status shows it.
type PRStatus struct {
	State  string `json:"pr_state"` // open, merged or closed
	Checks string `json:"checks"`   // success, failure, pending, or none (no checks)
	Review string `json:"review"`   // approved, changes_requested, or none
	// Mergeable is whether it merges cleanly with its base; nil while the
	// code host computes it, and once it is closed.
	Mergeable *bool `json:"mergeable"`
}

// ReviewDecision is the decision of reviews given in order: each
// reviewer's latest approval or change request counts (a comment neither
// grants nor withdraws one); one outstanding change request outweighs any
// approval.
func ReviewDecision(states map[string]string) string {
	decision := "none"
	for _, s := range states {
		switch s {
		case "CHANGES_REQUESTED":
			return "changes_requested"
		case "APPROVED":
			decision = "approved"
		}
	}
	return decision
}

// Tracker is where work items come from when the code lives on the forge
// but the work is tracked elsewhere (Jira, Linear): issues in; comments,
// states and links to pull requests out. Every write is idempotent, so a
// resumed run repeats none: a comment by its marker, a state by being in
// it already, a link by its URL.
type Tracker interface {
	// Issue fetches one issue by its key ("PROJ-123") or its URL, its
	// description and comments as one untrusted Markdown text.
	Issue(ctx context.Context, ref string) (Issue, error)
	// Search lists the issues q selects.
	Search(ctx context.Context, q TrackerQuery) ([]Issue, error)
	// Comment posts body (Markdown) on the issue once per marker.
	Comment(ctx context.Context, key, marker, body string) error
	// Move puts the issue in the status named state, by whichever
	// transition leads there; an issue already there is left alone.
	Move(ctx context.Context, key, state string) error
	// Link attaches url (a pull request's) to the issue once, titled
	// title.
	Link(ctx context.Context, key, url, title string) error
}

// TrackerQuery selects a tracker's issues (tracker.watch): a JQL query
// (Jira), or labels and a state within the project or team.
type TrackerQuery struct {
	JQL    string   `json:"jql,omitempty"`
	Labels []string `json:"labels,omitempty"`
	State  string   `json:"state,omitempty"`
	Limit  int      `json:"limit,omitempty"`
}
