package follow

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
)

// Head is a pull request as a list of them shows it.
type Head struct {
	Number  int
	State   string // open or closed
	Merged  bool
	Head    string
	Base    string // the base branch
	Title   string
	Updated time.Time
}

// Memory keeps what the passes saw, so that a pass in a new process (cadre
// watch --once from cron) asks GitHub only about what changed since.
type Memory interface {
	Load() ([]byte, error)
	Save(data []byte) error
}

// pollState is what passes saw: the latest update time any pull request
// had, the base's commit, and each followed pull request's view.
type pollState struct {
	Mark time.Time     `json:"mark"`
	Base string        `json:"base"`
	PRs  map[int]*seen `json:"prs"`
	// Said is why each pull request that could be merged is not, as last
	// said: it is said again only when it changes.
	Said map[int]string `json:"said,omitempty"`
}

// seen is what a pass saw of a pull request: while its update time and
// the base stay the same and no check was pending, the next pass need not
// ask GitHub about it again.
type seen struct {
	Updated time.Time `json:"updated"`
	Base    string    `json:"base"`
	View    View      `json:"view"`
	// Unchecked counts the passes in a row that saw the head with no
	// check at all, since Since: CI may not have queued its checks yet
	// after a push, so such a head is asked about again at every pass
	// (follow.merge_without_checks: for a few passes) until checks appear
	// or follow.checks_timeout passes.
	Unchecked int       `json:"unchecked,omitempty"`
	Since     time.Time `json:"since,omitzero"`
}

// uncheckedPasses is how many passes ask again about a head without any
// check before it is taken to have none, where a head may merge without.
const uncheckedPasses = 3

// poll is a pass's look at the pull requests: those updated since the
// last pass (every open one on a first pass), and the base's commit.
type poll struct {
	changed map[int]Head
	base    string
	mark    time.Time // the latest update time now
}

// look asks what changed since the last pass: one list of the pull
// requests updated since (all open ones the first time) and the base's
// commit. Nil when it cannot be had: each pull request is then asked
// about whole.
func (f *Follower) look(ctx context.Context) *poll {
	st := f.state()
	base, err := f.Trees.BaseHead(ctx)
	if err != nil {
		return nil
	}
	var heads []Head
	if st.Mark.IsZero() {
		heads, err = f.Host.OpenPRs(ctx)
	} else {
		heads, err = f.Host.UpdatedPRs(ctx, st.Mark)
	}
	if err != nil {
		return nil
	}
	p := &poll{changed: map[int]Head{}, base: base, mark: st.Mark}
	for _, h := range heads {
		p.changed[h.Number] = h
		if h.Updated.After(p.mark) {
			p.mark = h.Updated
		}
	}
	return p
}

// state is what earlier passes saw, read from Memory the first time.
func (f *Follower) state() *pollState {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen == nil {
		f.seen = &pollState{PRs: map[int]*seen{}}
		if f.Memory != nil {
			if data, err := f.Memory.Load(); err == nil {
				var st pollState
				if json.Unmarshal(data, &st) == nil && st.PRs != nil {
					f.seen = &st
				}
			}
		}
	}
	return f.seen
}

// remember keeps what pass p saw for the next one.
func (f *Follower) remember(p *poll) {
	if p == nil {
		return
	}
	st := f.state()
	f.mu.Lock()
	st.Mark, st.Base = p.mark, p.base
	data, err := json.Marshal(st)
	f.mu.Unlock()
	if err == nil && f.Memory != nil {
		if err := f.Memory.Save(data); err != nil {
			// The next process asks about every pull request again.
			f.say(Item{}, "keep what this pass saw: "+err.Error())
		}
	}
}

// view is pull request it.PR as it stands: what the last pass saw when
// nothing it depends on changed since (its mergeability computed again
// here when only the base moved), else GitHub's answer.
func (f *Follower) view(ctx context.Context, it Item, p *poll) (View, error) {
	st := f.state()
	f.mu.Lock()
	s := st.PRs[it.PR]
	f.mu.Unlock()
	if p == nil {
		return f.Host.View(ctx, it.PR, f.Config.Reviewers, nil)
	}
	h, changed := p.changed[it.PR]
	if changed && s != nil && h.Updated.Equal(s.Updated) && h.Head == s.View.Head {
		// Listed only because the list takes in its last update time.
		changed = false
	}
	if s != nil && !changed && !s.View.Pending && s.View.Mergeable != nil && s.View.State == "open" &&
		(s.View.Checked || f.Config.MergeWithoutChecks && s.Unchecked >= uncheckedPasses) && !f.mergeCandidate(s.View) {
		v := s.View
		if s.Base != p.base {
			ok, err := f.Trees.Mergeable(ctx, it.Branch, v.Head, p.base)
			if err != nil {
				return f.fresh(ctx, it, p, nil)
			}
			v.Mergeable = &ok
			f.keep(it, s.Updated, p.base, v)
		}
		return v, nil
	}
	var known *Head
	if changed {
		known = &h
	} else if s != nil {
		known = &Head{Number: it.PR, State: s.View.State, Head: s.View.Head, Base: s.View.Base, Updated: s.Updated}
	}
	return f.fresh(ctx, it, p, known)
}

// fresh asks GitHub about it's pull request (about all of it when known
// is nil), computing its mergeability here.
func (f *Follower) fresh(ctx context.Context, it Item, p *poll, known *Head) (View, error) {
	v, err := f.Host.View(ctx, it.PR, f.Config.Reviewers, known)
	if err != nil {
		return v, err
	}
	if known != nil && v.State == "open" {
		if ok, err := f.Trees.Mergeable(ctx, it.Branch, v.Head, p.base); err == nil {
			v.Mergeable = &ok
		}
	}
	updated := time.Time{}
	if known != nil {
		updated = known.Updated
	}
	f.keep(it, updated, p.base, v)
	return v, nil
}

func (f *Follower) keep(it Item, updated time.Time, base string, v View) {
	st := f.state()
	f.mu.Lock()
	defer f.mu.Unlock()
	n := &seen{Updated: updated, Base: base, View: v}
	if prev := st.PRs[it.PR]; prev != nil && !v.Checked && prev.View.Head == v.Head && !prev.Since.IsZero() {
		n.Unchecked, n.Since = prev.Unchecked+1, prev.Since
	} else if !v.Checked {
		n.Unchecked, n.Since = 1, f.now()
	}
	st.PRs[it.PR] = n
}

// mergeCandidate says whether v is approved where merging is on: a check
// run finishing or appearing moves no update time, so such a pull request
// is asked about at every pass until it merges.
func (f *Follower) mergeCandidate(v View) bool {
	return v.Approved && len(v.Changes) == 0 && f.Config.Merge != "" && f.Config.Merge != config.MergeOff
}

// unchecked is how long v's head has been seen without any check: zero
// when it has some.
func (f *Follower) unchecked(it Item, v View) time.Duration {
	if v.Checked {
		return 0
	}
	st := f.state()
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := st.PRs[it.PR]; s != nil && s.View.Head == v.Head && !s.Since.IsZero() {
		return f.now().Sub(s.Since)
	}
	return 0
}

// forget drops what was seen of it's pull request: cadre acted on it.
func (f *Follower) forget(it Item) {
	st := f.state()
	f.mu.Lock()
	delete(st.PRs, it.PR)
	f.mu.Unlock()
}

// Nudge drops what passes saw of the pull requests a webhook told of, by
// number or by head commit, so the next pass asks about them again: a
// check re-run on a head seen green, or a review, moves no update time
// the list of updated pull requests would show.
func (f *Follower) Nudge(prs []int, heads []string) {
	st := f.state()
	f.mu.Lock()
	defer f.mu.Unlock()
	for n, s := range st.PRs {
		if slices.Contains(prs, n) || s != nil && s.View.Head != "" && slices.Contains(heads, s.View.Head) {
			delete(st.PRs, n)
		}
	}
}
