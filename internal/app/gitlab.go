package app

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/ghtext"
	"github.com/cadre-dev/cadre/internal/gitlab"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// GitLab is the engine's codehost.Forge, and cadre watch's follow.Host,
// on GitLab.com or a self-managed GitLab. Repositories are projects (of
// nested groups too), pull requests merge requests, checks pipeline jobs.
// Like GitHub it resolves the token and the project on first use, and
// keeps the token only here, in memory.
type GitLab struct {
	cfg    config.Config
	root   string
	getenv func(string) string

	once    sync.Once
	err     error
	client  *gitlab.Client
	token   string
	project string // the project bare issue numbers belong to
	opts    []gitlab.Option
	mask    *redact.Redactor

	warn   func(msg string)
	warned sync.Map
	// answers is the file the client's answers to conditional requests
	// are kept in between processes; "" keeps them in memory.
	answers string

	// threads maps a discussion's first note to the discussion, as View
	// saw it, for Reply (follow.Host names a comment by its id).
	mu      sync.Mutex
	threads map[int64]string
	// rebased is the head each merge request was last asked to be
	// rebased at, and when, so Merge does not ask again for it while
	// GitLab has not yet shown the rebase running.
	rebased map[int]rebaseAsk
}

// NewGitLab returns ws's GitLab; getenv reads the token's variable. opts
// apply after cadre's own client options.
func NewGitLab(ws Workspace, getenv func(string) string, opts ...gitlab.Option) *GitLab {
	mask := redact.New(strings.TrimSpace(getenv(gitlabTokenEnv(ws.Config))))
	return &GitLab{cfg: ws.Config, root: ws.Root, getenv: getenv, opts: opts, mask: mask, threads: map[int64]string{},
		rebased: map[int]rebaseAsk{}}
}

// gitlabTokenEnv is the variable the GitLab token is read from.
func gitlabTokenEnv(cfg config.Config) string {
	return cmp.Or(strings.TrimSpace(cfg.GitLab.TokenEnv), "GITLAB_TOKEN")
}

func (g *GitLab) init(ctx context.Context) error {
	g.once.Do(func() { g.err = g.connect(ctx) })
	return g.err
}

// connect makes the client and settles the project.
func (g *GitLab) connect(ctx context.Context) error {
	env := gitlabTokenEnv(g.cfg)
	g.token = strings.TrimSpace(g.getenv(env))
	if g.token == "" {
		return fmt.Errorf("no GitLab token: $%s is empty: set it to a personal, project or group access token with the api scope (gitlab.token_env names another variable)", env)
	}
	g.mask.Add(g.token)
	opts := []gitlab.Option{gitlab.WithRedactor(g.mask), gitlab.WithWriteGap(time.Duration(g.cfg.GitLab.WriteInterval))}
	if ca := g.cfg.GitLab.CAFile; ca != "" {
		opts = append(opts, gitlab.WithCAFile(inRoot(g.root, ca)))
	}
	client, err := gitlab.New(g.cfg.GitLab.APIURL, g.token, append(opts, g.opts...)...)
	if err != nil {
		return err
	}
	g.client = client
	if g.answers != "" {
		g.loadAnswers()
	}
	g.project = strings.Trim(g.cfg.Repository, "/")
	if g.project == "" {
		g.project = g.originProject(ctx)
	}
	return nil
}

// originProject is the project of the origin remote, "" when it is on
// no GitLab host cadre knows.
func (g *GitLab) originProject(ctx context.Context) string {
	repo, err := workspace.Open(ctx, g.root)
	if err != nil {
		return ""
	}
	url, err := repo.Git(ctx, "config", "--get", "remote.origin.url")
	if err != nil {
		return ""
	}
	p, _ := gitlab.ProjectFromRemote(strings.TrimSpace(url), g.gitHost())
	return p
}

// gitHost is the host GitLab serves repositories from: forge.url's, else
// the API's.
func (g *GitLab) gitHost() string {
	if g.cfg.Forge.URL != "" {
		return urlHost(g.cfg.Forge.URL)
	}
	return urlHost(g.cfg.GitLab.APIURL)
}

// projectOf is the project cadre works on, refused when unknown.
func (g *GitLab) projectOf(ctx context.Context) (string, error) {
	if err := g.init(ctx); err != nil {
		return "", err
	}
	if g.project == "" {
		return "", fmt.Errorf("no GitLab project: set repository: group/project in cadre.yaml (or add an origin remote on %s)", g.gitHost())
	}
	return g.project, nil
}

// KeepAnswersIn keeps the client's answers to conditional requests in the
// file at path between processes.
func (g *GitLab) KeepAnswersIn(path string) {
	g.answers = path
	if g.client != nil {
		g.loadAnswers()
	}
}

// loadAnswers takes up the kept answers; unreadable ones are asked anew.
func (g *GitLab) loadAnswers() {
	if data, err := os.ReadFile(g.answers); err == nil {
		_ = g.client.KeepAnswers(data) // a damaged file costs requests, nothing else
	}
}

// KeepAnswers writes the client's answers to the Answers file.
func (g *GitLab) KeepAnswers() error {
	if g.answers == "" || g.client == nil {
		return nil
	}
	data, err := g.client.Answers()
	if err != nil {
		return err
	}
	return safefile.Replace(g.answers, data)
}

// SetWarn sets where what cadre should know of the project once goes.
func (g *GitLab) SetWarn(warn func(msg string)) { g.warn = warn }

// warnOnce tells warn msg, the first time only.
func (g *GitLab) warnOnce(msg string) {
	if _, seen := g.warned.LoadOrStore(msg, true); !seen && g.warn != nil {
		g.warn(msg)
	}
}

func (g *GitLab) useMask(m *redact.Redactor) { g.mask = m }

// LearnCredential reads the token (and so masks it) before GitLab is
// first called.
func (g *GitLab) LearnCredential(ctx context.Context) error { return g.init(ctx) }

// Issue fetches an issue and its notes as one untrusted text.
func (g *GitLab) Issue(ctx context.Context, ref string) (codehost.Issue, error) {
	if err := g.init(ctx); err != nil {
		return codehost.Issue{}, err
	}
	r, err := gitlab.ParseRef(ref, g.project)
	if err != nil {
		return codehost.Issue{}, err
	}
	is, err := g.client.Issue(ctx, r.Project, r.IID)
	if err != nil {
		return codehost.Issue{}, err
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(is.Body))
	for _, n := range is.Notes {
		fmt.Fprintf(&b, "\n\n---\nComment by @%s:\n\n%s", n.Author, strings.TrimSpace(n.Body))
	}
	return codehost.Issue{Repo: r.Project, Number: is.IID, Title: g.mask.String(is.Title), Body: g.mask.String(b.String()),
		URL: is.URL, Author: is.Author, Labels: is.Labels}, nil
}

// Issues lists the project's issues matching q.
func (g *GitLab) Issues(ctx context.Context, q codehost.IssueQuery) ([]codehost.Issue, error) {
	project, err := g.projectOf(ctx)
	if err != nil {
		return nil, err
	}
	list, err := g.client.Issues(ctx, project, gitlab.Query{Labels: q.Labels, Milestone: q.Milestone, Assignee: q.Assignee, State: q.State, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]codehost.Issue, 0, len(list))
	for _, is := range list {
		out = append(out, codehost.Issue{Repo: project, Number: is.IID, Title: g.mask.String(is.Title), URL: is.URL, Author: is.Author, Labels: is.Labels})
	}
	return out, nil
}

// Push pushes the branch to origin, with the token as git's HTTP password
// through cadre's push proxy (workspace.Repo.Push), as on GitHub.
func (g *GitLab) Push(ctx context.Context, dir, branch string) error {
	return pushBranch(ctx, g.mask, g.cfg.BaseBranch, dir, branch, g.RemoteAuth)
}

// RemoteAuth is where git reaches remote of the repository at dir, and
// the header carrying the token there: only an https push URL on the
// GitLab host takes it.
func (g *GitLab) RemoteAuth(ctx context.Context, dir, remote string) (target, header string, err error) {
	// GitLab takes an access token as the password of any user name.
	return httpsAuth(ctx, dir, remote, tokenHost{init: g.init, host: g.gitHost, token: func() string { return g.token },
		user: "oauth2", what: "the GitLab token is for (forge.url, gitlab.api_url)"})
}

// EnsurePR opens or adopts the merge request of the head branch.
func (g *GitLab) EnsurePR(ctx context.Context, p codehost.PullRequest) (string, int, error) {
	if err := g.init(ctx); err != nil {
		return "", 0, err
	}
	project := cmp.Or(p.Repo, g.project)
	own := ghtext.Issue{Repo: project, Number: p.Issue}
	mr, _, err := g.client.EnsureMR(ctx, project, gitlab.NewMR{Title: ghtext.Title(p.Title), Body: ghtext.Body(p.Body, own),
		Source: p.Head, Target: p.Base, Draft: p.Draft, Labels: p.Labels})
	return mr.URL, mr.IID, err
}

// EnsureComment posts a progress note on the issue once per marker.
func (g *GitLab) EnsureComment(ctx context.Context, repo string, issue int, marker, body string) error {
	if err := g.init(ctx); err != nil {
		return err
	}
	return g.client.EnsureIssueNote(ctx, repo, issue, tag(marker), ghtext.Body(body, ghtext.Issue{Repo: repo, Number: issue}))
}

// tag is marker as the gitlab client spells it inside its hidden comment
// (which adds "cadre:" itself), so a note carries the same hidden
// comment on GitLab as on GitHub.
func tag(marker string) string { return strings.TrimPrefix(marker, "cadre:") }

// PRState reports the merge request of a source branch: whether there is
// one, and whether it is merged or closed.
func (g *GitLab) PRState(ctx context.Context, branch string) (found, merged, closed bool, err error) {
	project, err := g.projectOf(ctx)
	if err != nil {
		return false, false, false, err
	}
	mr, err := g.client.FindMR(ctx, project, branch)
	if err != nil || mr == nil {
		return false, false, false, err
	}
	return true, mr.State == "merged", mr.State == "closed" || mr.State == "locked", nil
}

var _ Host = (*GitLab)(nil)
