package app

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/cabundle"
	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/ghtext"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// GitHub is the engine's codehost.Forge on GitHub. It resolves the token and
// the repository on first use, so runs that never touch GitHub need
// neither; the token lives only here, in memory.
type GitHub struct {
	cfg    config.Config
	root   string
	getenv func(string) string
	gh     func(context.Context) (string, error)

	once   sync.Once
	err    error
	client *forge.Client
	token  string
	repo   string // owner/repo the bare issue numbers belong to
	opts   []forge.Option
	// mask holds the secrets masked in what is sent and in errors: the
	// token once known, and those of the engine it serves.
	mask *redact.Redactor

	// Warn hears what cadre should know of the repository once (a
	// protection it may not read); nil drops it.
	Warn   func(msg string)
	warned sync.Map
	// answers is a file the client's answers to conditional requests are
	// kept in between processes (KeepAnswersIn); "" keeps them in memory.
	answers string
}

// KeepAnswersIn keeps the client's answers to conditional requests in the
// file at path between processes: they are read from it now (or when the
// client is made) and written by KeepAnswers.
func (g *GitHub) KeepAnswersIn(path string) {
	g.answers = path
	if g.client != nil {
		g.loadAnswers()
	}
}

// loadAnswers takes up the answers kept in the file; answers that cannot
// be read are asked for anew, at no harm.
func (g *GitHub) loadAnswers() {
	if data, err := os.ReadFile(g.answers); err == nil {
		g.client.KeepAnswers(data)
	}
}

// KeepAnswers writes the client's answers to conditional requests to the
// Answers file, for the next process to ask on condition too.
func (g *GitHub) KeepAnswers() error {
	if g.answers == "" || g.client == nil {
		return nil
	}
	data, err := g.client.Answers()
	if err != nil {
		return err
	}
	return safefile.Replace(g.answers, data)
}

// warnOnce tells Warn msg, the first time only.
func (g *GitHub) warnOnce(msg string) {
	if _, seen := g.warned.LoadOrStore(msg, true); !seen && g.Warn != nil {
		g.Warn(msg)
	}
}

// NewGitHub returns ws's GitHub; getenv reads the token's variable. opts
// apply after cadre's own client options, so they override them (a fake
// server in a benchmark needs no write spacing).
func NewGitHub(ws Workspace, getenv func(string) string, opts ...forge.Option) *GitHub {
	// The token of the environment is masked from the start, in errors
	// and in what Push checks, before GitHub is first reached.
	mask := redact.New(strings.TrimSpace(getenv(tokenEnv(ws.Config))))
	return &GitHub{cfg: ws.Config, root: ws.Root, getenv: getenv, gh: forge.GHToken(ws.Config.GitHub.APIURL), opts: opts, mask: mask}
}

func (g *GitHub) init(ctx context.Context) error {
	g.once.Do(func() {
		token, err := forge.TokenFrom(ctx, g.getenv, g.cfg.GitHub.TokenEnv, g.gh)
		if err != nil {
			g.err = err
			return
		}
		g.token = token
		g.mask.Add(token)
		opts := []forge.Option{forge.WithRedactor(g.mask), forge.WithWriteGap(time.Duration(g.cfg.GitHub.WriteInterval))}
		if ca := g.cfg.GitHub.CAFile; ca != "" {
			t, err := cabundle.Transport(nil, inRoot(g.root, ca))
			if err != nil {
				g.err = fmt.Errorf("github.ca_file: %w", err)
				return
			}
			opts = append(opts, forge.WithHTTPClient(&http.Client{Transport: t}))
		}
		g.client, g.err = forge.New(g.cfg.GitHub.APIURL, token, append(opts, g.opts...)...)
		if g.err == nil && g.answers != "" {
			g.loadAnswers()
		}
		g.repo = g.cfg.Repository
		if g.repo == "" {
			if repo, err := workspace.Open(ctx, g.root); err == nil {
				if url, err := repo.Git(ctx, "remote", "get-url", "origin"); err == nil {
					if o, r, ok := forge.RepoFromRemote(strings.TrimSpace(url)); ok {
						g.repo = o + "/" + r
					}
				}
			}
		}
	})
	return g.err
}

// SetWarn sets where what cadre should know of the repository once goes.
func (g *GitHub) SetWarn(warn func(msg string)) { g.Warn = warn }

// useMask makes g mask m's secrets, adding its token to m once learnt.
func (g *GitHub) useMask(m *redact.Redactor) { g.mask = m }

// inRoot is path, relative to the repository's root unless absolute.
func inRoot(root, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

// LearnCredential resolves the token (and so masks it) before GitHub is
// first called.
func (g *GitHub) LearnCredential(ctx context.Context) error { return g.init(ctx) }

// Issue fetches an issue and its comments as one untrusted text.
func (g *GitHub) Issue(ctx context.Context, ref string) (codehost.Issue, error) {
	if err := g.init(ctx); err != nil {
		return codehost.Issue{}, err
	}
	r, err := forge.ParseRef(ref, g.repo)
	if err != nil {
		return codehost.Issue{}, err
	}
	is, err := g.client.Issue(ctx, r)
	if err != nil {
		return codehost.Issue{}, err
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(is.Body))
	for _, c := range is.Comments {
		fmt.Fprintf(&b, "\n\n---\nComment by @%s:\n\n%s", c.Author, strings.TrimSpace(c.Body))
	}
	// A secret of cadre's written into the issue is masked before the
	// issue is stored (its record, task file, branch name, journal) or
	// shown to an agent.
	return codehost.Issue{Repo: r.Owner + "/" + r.Repo, Number: is.Number, Title: g.mask.String(is.Title), Body: g.mask.String(b.String()),
		URL: is.URL, Author: is.Author, Labels: is.Labels}, nil
}

// Issues lists the repository's issues matching q.
func (g *GitHub) Issues(ctx context.Context, q codehost.IssueQuery) ([]codehost.Issue, error) {
	if err := g.init(ctx); err != nil {
		return nil, err
	}
	owner, name, err := forge.ParseRepo(g.repo)
	if err != nil {
		return nil, fmt.Errorf("%w (set repository: in cadre.yaml)", err)
	}
	list, err := g.client.Issues(ctx, owner, name, forge.Query{Labels: q.Labels, Milestone: q.Milestone, Assignee: q.Assignee, State: q.State, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]codehost.Issue, 0, len(list))
	for _, is := range list {
		out = append(out, codehost.Issue{Repo: owner + "/" + name, Number: is.Number, Title: g.mask.String(is.Title), URL: is.URL, Author: is.Author, Labels: is.Labels})
	}
	return out, nil
}

// Push pushes the branch to origin, authenticating over HTTPS with the
// token through cadre's push proxy (never git's argv, environment or the
// remote URL: see workspace.Repo.Push).
func (g *GitHub) Push(ctx context.Context, dir, branch string) error {
	return pushBranch(ctx, g.mask, g.cfg.BaseBranch, dir, branch, g.RemoteAuth)
}

// pushBranch pushes branch of the tree at dir to origin as auth says to
// reach it, once its history since base is seen to carry none of mask's
// secrets; an error is masked too.
func pushBranch(ctx context.Context, mask *redact.Redactor, base, dir, branch string,
	auth func(ctx context.Context, dir, remote string) (string, string, error)) error {
	// dir is the item's working tree, as the engine made it: git need not
	// be asked for its top level (push runs from anywhere in a tree).
	repo := &workspace.Repo{Dir: dir}
	if err := checkHistory(ctx, mask, base, repo, branch); err != nil {
		return err
	}
	remote, header, err := auth(ctx, dir, "origin")
	if err != nil {
		return err
	}
	if err := repo.Push(ctx, remote, branch, header); err != nil {
		return fmt.Errorf("%s", mask.String(err.Error()))
	}
	return nil
}

// checkHistory refuses a branch whose commits since base carry one of the
// secrets mask masks, in a message or a change: an agent that committed
// one itself, since the files cadre commits are masked as it commits them.
// Pushed, the secret would be public whatever the branch's last tree says.
func checkHistory(ctx context.Context, mask *redact.Redactor, base string, repo *workspace.Repo, branch string) error {
	if !mask.Enabled() {
		return nil
	}
	out, err := repo.Git(ctx, "log", "-p", "--no-color", "--no-ext-diff", "--no-textconv", "--format=%x00%H%n%B", base+".."+branch, "--")
	if err != nil {
		return fmt.Errorf("push %s: read its commits since %s: %w", branch, base, err)
	}
	for _, c := range strings.Split(out, "\x00") {
		if mask.String(c) != c {
			sha, _, _ := strings.Cut(c, "\n")
			return fmt.Errorf("push %s: commit %.12s carries a secret of cadre's (its code host token or a model key) in its message or changes, "+
				"so nothing was pushed: take it out of the branch's history (git rebase -i %s), then resume", branch, sha, base)
		}
	}
	return nil
}

// The engine's remote items fetch and push with the token as the pull
// request's push does (executor.OpenOptions.Remote).
var _ interface {
	RemoteAuth(ctx context.Context, dir, remote string) (string, string, error)
} = (*GitHub)(nil)

// RemoteAuth is where git reaches remote of the repository at dir, and
// the header carrying the token there (for an https push URL on the
// GitHub host; remote itself and no header otherwise). The URL git
// pushes to (a pushurl wins over the url) is read once and used as read:
// the token goes only to the GitHub host, never to a host a pushurl
// names, which an unconfined agent could have set.
func (g *GitHub) RemoteAuth(ctx context.Context, dir, remote string) (target, header string, err error) {
	return httpsAuth(ctx, dir, remote, tokenHost{init: g.init, host: g.gitHost, token: func() string { return g.token },
		user: "x-access-token", what: "the GitHub token is for (github.api_url)"})
}

// tokenHost is a forge as git reaches it over https with its token: the
// token made ready (init), the host it is for, and the user name it goes
// with.
type tokenHost struct {
	init  func(context.Context) error
	host  func() string
	token func() string
	user  string
	what  string // what the host is, as an error says it
}

// httpsAuth is where git reaches remote of the repository at dir, and the
// header carrying h's token there. Only an https push URL on h's own host
// takes the token; another (ssh, a path) is reached with git's own
// credentials and gets none, and an https one elsewhere is refused.
func httpsAuth(ctx context.Context, dir, remote string, h tokenHost) (target, header string, err error) {
	repo := &workspace.Repo{Dir: dir}
	url, err := repo.Git(ctx, "remote", "get-url", "--push", remote)
	if err != nil || !strings.HasPrefix(strings.TrimSpace(url), "https://") {
		return remote, "", nil
	}
	if err := h.init(ctx); err != nil {
		return "", "", err
	}
	target = strings.TrimSpace(url)
	if host, want := urlHost(target), h.host(); host != want {
		return "", "", fmt.Errorf("push: %s's push URL is on %s, not on %s, where %s: cadre sends it nowhere else", remote, host, want, h.what)
	}
	return target, "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(h.user+":"+h.token())), nil
}

// gitHost is the host GitHub serves repositories from: the API's host
// without its "api." (github.com for api.github.com, octo.ghe.com for
// GitHub Enterprise Cloud's api.octo.ghe.com), else the API's own host
// (GitHub Enterprise Server's https://HOST/api/v3).
func (g *GitHub) gitHost() string {
	return strings.TrimPrefix(urlHost(g.cfg.GitHub.APIURL), "api.")
}

// urlHost is the lower-case host name of raw, without port or user.
func urlHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// EnsurePR opens or adopts the pull request of the head branch.
func (g *GitHub) EnsurePR(ctx context.Context, p codehost.PullRequest) (string, int, error) {
	if err := g.init(ctx); err != nil {
		return "", 0, err
	}
	// A tracker's issue names no repository: the code is this one's.
	repo := cmp.Or(p.Repo, g.repo)
	owner, name, err := forge.ParseRepo(repo)
	if err != nil {
		return "", 0, err
	}
	// The title and body are agents' text: made safe before they go out.
	own := ghtext.Issue{Repo: repo, Number: p.Issue}
	pr, _, err := g.client.EnsurePR(ctx, owner, name, forge.NewPR{Title: ghtext.Title(p.Title), Body: ghtext.Body(p.Body, own),
		Head: p.Head, Base: p.Base, Draft: p.Draft, Labels: p.Labels})
	return pr.URL, pr.Number, err
}

// EnsureComment posts a progress comment once per marker.
func (g *GitHub) EnsureComment(ctx context.Context, repo string, issue int, marker, body string) error {
	if err := g.init(ctx); err != nil {
		return err
	}
	owner, name, err := forge.ParseRepo(repo)
	if err != nil {
		return err
	}
	_, err = g.client.EnsureComment(ctx, owner, name, issue, marker, ghtext.Body(body, ghtext.Issue{Repo: repo, Number: issue}))
	return err
}

// PRState reports the pull request of a head branch: whether there is one,
// and whether it is merged or closed.
func (g *GitHub) PRState(ctx context.Context, branch string) (found, merged, closed bool, err error) {
	if err := g.init(ctx); err != nil {
		return false, false, false, err
	}
	owner, name, err := forge.ParseRepo(g.repo)
	if err != nil {
		return false, false, false, err
	}
	pr, err := g.client.FindPR(ctx, owner, name, branch)
	if err != nil || pr == nil {
		return false, false, false, err
	}
	return true, pr.Merged, pr.State == "closed", nil
}

// PRStatus reports where pull request number stands: its state, its head's
// checks, the reviews' decision and whether it merges cleanly.
func (g *GitHub) PRStatus(ctx context.Context, number int) (codehost.PRStatus, error) {
	if err := g.init(ctx); err != nil {
		return codehost.PRStatus{}, err
	}
	owner, name, err := forge.ParseRepo(g.repo)
	if err != nil {
		return codehost.PRStatus{}, err
	}
	pr, err := g.client.PR(ctx, owner, name, number)
	if err != nil {
		return codehost.PRStatus{}, err
	}
	out := codehost.PRStatus{State: follow.StateOf(pr.State, pr.Merged), Mergeable: pr.Mergeable}
	checks, err := g.client.FailedChecks(ctx, owner, name, pr.HeadSHA)
	if err != nil {
		return codehost.PRStatus{}, err
	}
	switch {
	case len(checks.Failed) > 0:
		out.Checks = "failure"
	case len(checks.Pending) > 0:
		out.Checks = "pending"
	case checks.Passed > 0:
		out.Checks = "success"
	default:
		out.Checks = "none"
	}
	reviews, err := g.client.Reviews(ctx, owner, name, number)
	if err != nil {
		return codehost.PRStatus{}, err
	}
	// Only the reviews cadre watch would count: a stranger's approval
	// does not make it approved.
	counts := counted(g.cfg.Follow.Reviewers)
	latest := map[string]string{}
	for author, r := range latestVerdicts(slices.DeleteFunc(reviews, func(r forge.Review) bool { return !counts(r.Author, r.Association) })) {
		latest[author] = r.State
	}
	out.Review = codehost.ReviewDecision(latest)
	return out, nil
}
