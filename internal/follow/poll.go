package follow

import (
	"context"
	"encoding/json"
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
	// Fed says the head's checks are known from webhooks' deliveries:
	// View need not ask for them (the follower sets them).
	Fed bool
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
	// Fed is what webhooks told of commits' checks; Delivers says a
	// check's delivery has come in, so new heads' are awaited from them.
	Fed      map[string]*fed `json:"fed,omitempty"`
	Delivers bool            `json:"delivers,omitempty"`
	// BaseMoved says a delivery told of a push to the base since it was
	// last fetched.
	BaseMoved bool `json:"base_moved,omitempty"`
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
	// Fed is when a webhook last told of the pull request or its head's
	// checks (zero: all of it was asked); Ask says a delivery told of
	// something it does not carry (a review), to be asked about.
	Fed time.Time `json:"fed,omitzero"`
	Ask bool      `json:"ask,omitempty"`
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
	f.mu.Lock()
	st.BaseMoved = false
	f.mu.Unlock()
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
		if f.seen.Fed == nil {
			f.seen.Fed = map[string]*fed{}
		}
		// What deliveries told an earlier process is not taken as it
		// stands: deliveries came and went unheard while none listened.
		for _, s := range f.seen.PRs {
			s.Fed = time.Time{}
		}
		for _, t := range f.seen.Fed {
			t.At = time.Time{}
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

// view is pull request it.PR as it stands: what the passes saw when
// nothing it depends on changed since, or what webhooks told of it, its
// mergeability computed here when the base moved; else the forge's answer
// (its checks as webhooks told them, where they did lately). told says
// some of it is the deliveries' word, not the forge's.
func (f *Follower) view(ctx context.Context, it Item, p *poll) (v View, told bool, err error) {
	if p == nil {
		v, err = f.Host.View(ctx, it.PR, f.Config.Reviewers, nil)
		return v, false, err
	}
	st := f.state()
	f.mu.Lock()
	s := st.PRs[it.PR]
	told = s != nil && f.told(st, s)
	cached := s != nil && (told || f.cached(s))
	f.mu.Unlock()
	h, changed := p.changed[it.PR]
	if changed && s != nil && h.Updated.Equal(s.Updated) && h.Head == s.View.Head {
		// Listed only because the list takes in its last update time.
		changed = false
	}
	if cached && !changed {
		v = s.View
		if v.State == "open" && (s.Base != p.base || v.Mergeable == nil) {
			ok, err := f.Trees.Mergeable(ctx, it.Branch, v.Head, p.base)
			if err != nil {
				v, _, err = f.fresh(ctx, it, p, nil)
				return v, false, err
			}
			v.Mergeable = &ok
			f.mu.Lock()
			s.View.Mergeable, s.Base = &ok, p.base
			f.mu.Unlock()
		}
		return v, told, nil
	}
	var known *Head
	if changed {
		known = &h
	} else if s != nil {
		known = &Head{Number: it.PR, State: s.View.State, Head: s.View.Head, Base: s.View.Base, Title: s.View.Title, Updated: s.Updated}
	}
	return f.fresh(ctx, it, p, known)
}

// cached says whether the view s holds, asked of the forge, still stands
// as long as its update time and the base do: nothing of it is awaited.
func (f *Follower) cached(s *seen) bool {
	return !s.Ask && !s.View.Pending && s.View.Mergeable != nil && s.View.State == "open" &&
		(s.View.Checked || f.Config.MergeWithoutChecks && s.Unchecked >= uncheckedPasses) && !f.mergeCandidate(s.View)
}

// fresh asks the forge about it's pull request (about all of it when
// known is nil), computing its mergeability here. A head whose checks
// deliveries told of lately is not asked about them (told); one they told
// of long ago is, and what was told is replaced by the answer.
func (f *Follower) fresh(ctx context.Context, it Item, p *poll, known *Head) (v View, told bool, err error) {
	st := f.state()
	if known != nil {
		f.mu.Lock()
		t := st.Fed[known.Head]
		known.Fed = t != nil && f.Trust > 0 && f.now().Sub(t.At) < f.Trust
		f.mu.Unlock()
	}
	v, err = f.Host.View(ctx, it.PR, f.Config.Reviewers, known)
	if err != nil {
		return v, false, err
	}
	if known != nil && v.State == "open" {
		if ok, err := f.Trees.Mergeable(ctx, it.Branch, v.Head, p.base); err == nil {
			v.Mergeable = &ok
		}
	}
	var fedAt time.Time
	f.mu.Lock()
	if t := st.Fed[v.Head]; t != nil {
		if known != nil && known.Fed {
			t.apply(&v)
			told = true
		} else {
			t.Runs, t.At = map[string]Run{}, f.now()
			t.seed(v)
		}
		fedAt = f.now()
	}
	f.mu.Unlock()
	updated := time.Time{}
	if known != nil {
		updated = known.Updated
	}
	f.keep(it, updated, p.base, v, fedAt)
	return v, told, nil
}

func (f *Follower) keep(it Item, updated time.Time, base string, v View, fedAt time.Time) {
	st := f.state()
	f.mu.Lock()
	defer f.mu.Unlock()
	n := &seen{Updated: updated, Base: base, View: v, Fed: fedAt}
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
