// Package gitlab is cadre's GitLab client: issues in, merge requests,
// notes and merges out, on GitLab.com or a self-managed instance. It is
// built on gitlab.com/gitlab-org/api/client-go, under a transport of its
// own (transport.go) that does what cadre needs of every call.
//
// Every write is idempotent by a key GitLab can be asked about, so a crash
// (or a timed-out request that did succeed) between "done" and "recorded"
// never duplicates it: a merge request is keyed by its source branch
// (EnsureMR), a note by a hidden marker in its body (EnsureIssueNote,
// EnsureMRNote, Reply).
//
// The Client honours GitLab's rate limits (Retry-After, RateLimit-Reset)
// with bounded waits, sends one mutating request at a time, and asks again
// for what it read before on condition (If-None-Match with the ETag it
// kept). The token is sent only in the PRIVATE-TOKEN header, and is masked
// in every error the Client returns.
package gitlab

import "time"

// Issue is a GitLab issue with its notes. Title, Body and the notes are
// written by anyone who can open an issue: untrusted text.
type Issue struct {
	IID    int
	Title  string
	Body   string
	URL    string // the issue's page
	Author string // username
	State  string // opened or closed
	Labels []string
	Notes  []Note // set by Issue only: people's notes, oldest first
}

// Note is one comment on an issue or merge request.
type Note struct {
	ID      int64
	Author  string // username
	Body    string
	System  bool // written by GitLab itself ("added 1 commit")
	Created time.Time
}

// Query selects issues of one project.
type Query struct {
	Labels    []string // every one must be on the issue
	Milestone string   // title, "*" (any) or "none"
	Assignee  string   // username, "*" (any) or "none"
	State     string   // open (default), closed or all
	Limit     int      // at most this many issues; 0 means DefaultLimit
}

// DefaultLimit is how many issues Issues returns when Query.Limit is 0.
const DefaultLimit = 30

// MR is a merge request as it stands.
type MR struct {
	IID    int
	URL    string
	State  string // opened, closed, merged or locked
	Source string // source branch
	Target string // target branch
	Title  string
	Body   string
	SHA    string // the source branch's head commit
	Draft  bool
	// HasConflicts is whether the source conflicts with the target.
	HasConflicts bool
	// MergeStatus is GitLab's detailed_merge_status: mergeable,
	// checking, unchecked, conflict, ci_must_pass, not_approved,
	// discussions_not_resolved, draft_status, need_rebase…
	MergeStatus string
	// MergeError is why GitLab's last merge or rebase of it failed, ""
	// when none did since the source was last pushed to. Set by MR only.
	MergeError string
	// RebaseInProgress says a rebase GitLab was asked for still runs.
	// Set by MR only.
	RebaseInProgress bool
	Updated          time.Time
	Author           string // username
}

// NeedRebase is the detailed_merge_status of a merge request the
// project's merge method (fast-forward, semi-linear) merges only once its
// source holds the target's head.
const NeedRebase = "need_rebase"

// NewMR is the merge request EnsureMR opens, or brings an existing one
// for the same source branch up to.
type NewMR struct {
	Title  string
	Body   string
	Source string // source branch, in the same project
	Target string
	Draft  bool     // spelt as GitLab does: a "Draft: " title prefix
	Labels []string // added to the merge request
}

// Job is one CI job of a pipeline. Its name and stage come from the
// project's .gitlab-ci.yml: untrusted.
type Job struct {
	ID           int64
	Name         string
	Stage        string
	Status       string // success, failed, canceled, running, manual…
	URL          string
	AllowFailure bool
}

// Pipeline is what a head's newest pipeline says of it.
type Pipeline struct {
	ID     int64
	Status string // GitLab's; "" when the head has no pipeline
	// Failed are the jobs that keep the head from passing: failed or
	// canceled, and not allowed to fail.
	Failed  []Job
	Pending int // jobs not finished yet
	Passed  int // jobs that passed, were skipped, wait for a person, or failed while allowed to
	// Succeeded names the jobs that succeeded, for follow.required_checks.
	Succeeded []string
}

// Thread is a discussion on a merge request as its first note opened it.
// Body is untrusted text.
type Thread struct {
	Discussion string // the discussion's id, for Reply
	NoteID     int64
	Author     string // username
	Body       string
	Path       string // the file a diff note is on; "" for a general one
	Line       int    // its line in the new file (the old one for a removed line); 0 for none
	Resolved   bool
	Created    time.Time
}

// Approval is one user's approval of a merge request.
type Approval struct {
	Author string    // username
	At     time.Time // when; zero when GitLab does not say
}
