package app

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/tracker/jira"
	"github.com/cadre-dev/cadre/internal/tracker/linear"
)

// NewTracker returns the tracker cadre.yaml's tracker section names (nil
// without one). Its client is made on first use, so runs that never touch
// the tracker need no token; mask hears the token, masked everywhere.
func NewTracker(cfg config.Config, getenv func(string) string, mask *redact.Redactor) codehost.Tracker {
	if cfg.Tracker.Type == "" {
		return nil
	}
	return &lazyTracker{cfg: cfg.Tracker, getenv: getenv, mask: mask}
}

// lazyTracker makes the tracker's client on first use.
type lazyTracker struct {
	cfg    config.Tracker
	getenv func(string) string
	mask   *redact.Redactor

	once sync.Once
	t    codehost.Tracker
	err  error
}

func (l *lazyTracker) get() (codehost.Tracker, error) {
	l.once.Do(func() { l.t, l.err = l.connect() })
	return l.t, l.err
}

// connect makes the client of the tracker's type.
func (l *lazyTracker) connect() (codehost.Tracker, error) {
	env := l.cfg.TokenVar()
	token := strings.TrimSpace(l.getenv(env))
	if l.mask == nil {
		l.mask = redact.New()
	}
	l.mask.Add(token)
	switch l.cfg.Type {
	case config.TrackerJira:
		if token == "" {
			return nil, fmt.Errorf("no Jira token: $%s is empty: set it to email:api_token (Jira Cloud) or a personal access token (Data Center); tracker.token_env names another variable", env)
		}
		return jira.New(jira.Options{URL: l.cfg.URL, Token: token, Project: l.cfg.Project, Redactor: l.mask})
	default:
		if token == "" {
			return nil, fmt.Errorf("no Linear token: $%s is empty: set it to a personal API key (Linear: Settings, Security & access); tracker.token_env names another variable", env)
		}
		return linear.New(linear.Options{URL: l.cfg.URL, Token: token, Team: l.cfg.Team, Redactor: l.mask})
	}
}

func (l *lazyTracker) Issue(ctx context.Context, ref string) (codehost.Issue, error) {
	t, err := l.get()
	if err != nil {
		return codehost.Issue{}, err
	}
	is, err := t.Issue(ctx, ref)
	// A secret of cadre's written into the issue is masked before the
	// issue is stored or shown to an agent.
	is.Title, is.Body = l.mask.String(is.Title), l.mask.String(is.Body)
	return is, err
}

func (l *lazyTracker) Search(ctx context.Context, q codehost.TrackerQuery) ([]codehost.Issue, error) {
	t, err := l.get()
	if err != nil {
		return nil, err
	}
	return t.Search(ctx, q)
}

func (l *lazyTracker) Comment(ctx context.Context, key, marker, body string) error {
	t, err := l.get()
	if err != nil {
		return err
	}
	return t.Comment(ctx, key, marker, l.mask.String(body))
}

func (l *lazyTracker) Move(ctx context.Context, key, state string) error {
	t, err := l.get()
	if err != nil {
		return err
	}
	return t.Move(ctx, key, state)
}

func (l *lazyTracker) Link(ctx context.Context, key, url, title string) error {
	t, err := l.get()
	if err != nil {
		return err
	}
	return t.Link(ctx, key, url, l.mask.String(title))
}

// trackerEnding moves a tracker's issue to tracker.states.done when cadre
// watch sees its pull request merged (Follower.Ending); a failure is a
// warning, the person can move it.
func trackerEnding(t codehost.Tracker, done string, st *store.Store, warn func(follow.Item, string)) func(context.Context, follow.Item, string) {
	return func(ctx context.Context, it follow.Item, state string) {
		if t == nil || done == "" || state != "merged" {
			return
		}
		rec, err := st.GetItem(ctx, it.Run, it.ID)
		if err != nil {
			return
		}
		is, ok := intake.IssueOf(rec)
		if !ok || is.Key == "" {
			return
		}
		if err := t.Move(ctx, is.Key, done); err != nil {
			warn(it, fmt.Sprintf("tracker issue %s: %v", is.Key, err))
		}
	}
}

// trackerPaused tells a tracker's issue that cadre watch waits for a
// person on its pull request, why, and how to answer; once per reason.
func trackerPaused(ctx context.Context, t codehost.Tracker, st *store.Store, it follow.Item, reason string, warn func(follow.Item, string)) {
	if t == nil {
		return
	}
	rec, err := st.GetItem(ctx, it.Run, it.ID)
	if err != nil {
		return
	}
	is, ok := intake.IssueOf(rec)
	if !ok || is.Key == "" {
		return
	}
	sum := sha256.Sum256([]byte(reason))
	marker := fmt.Sprintf("cadre:%s:%s:paused-%x", it.Run, it.ID, sum[:4])
	body := fmt.Sprintf("cadre is waiting for a person on pull request #%d: %s\n\n`cadre approve %s %s` gives it more rounds; `cadre approve --reject %s %s` closes it.",
		it.PR, reason, it.Run, it.ID, it.Run, it.ID)
	if err := t.Comment(ctx, is.Key, marker, body); err != nil {
		warn(it, fmt.Sprintf("tracker issue %s: %v", is.Key, err))
	}
}
