// Package forge talks to GitHub's REST API: issues in, pull requests and
// comments out.
//
// Every write is idempotent by a key GitHub can be asked about, so a crash
// (or a timed-out request that did succeed) between "done" and "recorded"
// never duplicates it: a pull request is keyed by its head branch
// (EnsurePR), a comment by a hidden marker in its body (EnsureComment).
//
// The Client honours GitHub's rate limits (retry-after, x-ratelimit-reset,
// secondary limits) with bounded waits, and sends one mutating request at a
// time. It asks again for what it read before on condition (If-None-Match
// with the ETag it kept), so polling what did not change costs no quota. The token is sent only in the Authorization header: never in a URL,
// an error or a log line.
package forge

import "fmt"

// Issue is a GitHub issue with its comments. Title, Body and the comments
// are written by anyone who can open an issue: untrusted text.
type Issue struct {
	Number   int
	Title    string
	Body     string
	URL      string // the issue's page
	Author   string // login
	Labels   []string
	Comments []Comment
	State    string // open or closed
}

// Comment is one comment on an issue.
type Comment struct {
	ID     int64
	Author string // login
	Body   string
}

// PR is a pull request.
type PR struct {
	Number int
	URL    string // the pull request's page
	State  string // open or closed; a merged one is closed with Merged set
	Merged bool
	Head   string // head branch
	Base   string // base branch
	Title  string
	Body   string
	Draft  bool
}

// NewPR is the pull request EnsurePR opens, or brings an existing one for
// the same head branch up to.
type NewPR struct {
	Title  string
	Body   string
	Head   string // branch, or owner:branch for a fork
	Base   string
	Draft  bool     // only applied when the pull request is created
	Labels []string // added to the pull request
}

// Query selects issues of one repository.
type Query struct {
	Labels    []string // every one must be on the issue
	Milestone string   // number, title, "*" (any) or "none"
	Assignee  string   // login, "*" (any) or "none"
	State     string   // open (default), closed or all
	Limit     int      // at most this many issues; 0 means DefaultLimit
}

// DefaultLimit is how many issues Issues returns when Query.Limit is 0.
const DefaultLimit = 30

// Ref names one issue of one repository.
type Ref struct {
	Owner  string
	Repo   string
	Number int
}

// String spells r as owner/repo#N.
func (r Ref) String() string { return fmt.Sprintf("%s/%s#%d", r.Owner, r.Repo, r.Number) }
