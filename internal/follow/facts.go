package follow

import (
	"context"
	"maps"
	"slices"
	"time"
)

// Fact is what a webhook told of a pull request or a commit, signed by
// the forge. Applied to what the passes saw (Apply), it lets a pass act
// on the pull request as it stands without asking the forge again.
type Fact struct {
	PR     int    // the pull request; 0 when the delivery names only a commit
	Commit string // the commit Run is a check of, or the one Ask is about
	// Pull is the pull request as the delivery shows it: its state, head,
	// base, title and update time.
	Pull *Head
	// Run is a check of Commit: a check run, commit status or job.
	Run *Run
	// Base says the base branch moved: the next pass fetches it.
	Base bool
	// Ask is what a delivery tells of without saying it (a review, a
	// check suite's end): PR, or the pull requests at Commit, are asked
	// about again; with Commit, their checks too, unless checks'
	// deliveries come in.
	Ask bool
}

// Run is a check of a commit as a delivery shows it.
type Run struct {
	Name  string `json:"name"`
	Order int64  `json:"order,omitempty"` // its id: a later run of the name has a greater one
	Done  bool   `json:"done,omitempty"`
	// Passed is a finished run that succeeded; Failed one that failed,
	// with what fix-surgeon gets of it. Neither: still running.
	Passed bool   `json:"passed,omitempty"`
	Failed *Check `json:"failed,omitempty"`
}

// fed is what deliveries told of a commit's checks, by name.
type fed struct {
	At   time.Time      `json:"at"`
	Runs map[string]Run `json:"runs"`
}

// maxFed bounds the commits whose checks are kept: the oldest told of go
// first (a pull request at one is then asked about).
const maxFed = 4096

// Apply takes in what webhooks told, for the next pass (Pass or Woken)
// to act on. Once a check's delivery has come in, the forge is taken to
// deliver them: a new head's checks are then awaited from deliveries,
// not asked for, until Trust passes without word of them.
func (f *Follower) Apply(facts []Fact) {
	st := f.state()
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	for _, fc := range facts {
		switch {
		case fc.Pull != nil:
			f.applyPull(st, fc.PR, *fc.Pull, now)
		case fc.Run != nil && fc.Commit != "":
			st.Delivers = true
			f.applyRun(st, fc.Commit, *fc.Run, now)
		case fc.Base:
			st.BaseMoved = true
		case fc.Ask:
			for n, s := range st.PRs {
				if n == fc.PR || fc.PR == 0 && s.View.Head == fc.Commit {
					s.Ask = true
				}
			}
			if fc.Commit != "" && !st.Delivers {
				// Its checks too, unless their own deliveries tell them.
				delete(st.Fed, fc.Commit)
			}
		}
	}
	pruneFed(st)
}

// applyPull takes in a pull request as a delivery shows it: a new head
// starts with no check, its checks awaited from deliveries where they
// come.
func (f *Follower) applyPull(st *pollState, pr int, h Head, now time.Time) {
	s := st.PRs[pr]
	if s == nil {
		// Its reviews are not known here: the pass asks for them.
		s = &seen{Ask: true}
		st.PRs[pr] = s
	}
	if h.Updated.Before(s.Updated) {
		return // an older delivery come late: what it says has changed since
	}
	v := &s.View
	if v.Head != h.Head {
		*v = View{Approved: v.Approved, Changes: v.Changes, Comments: v.Comments, Required: v.Required, Head: h.Head}
		s.Unchecked, s.Since = 0, now
		if st.Delivers && st.Fed[h.Head] == nil {
			st.Fed[h.Head] = &fed{At: now, Runs: map[string]Run{}}
		}
	}
	v.State, v.Base, v.Title = StateOf(h.State, h.Merged), h.Base, h.Title
	s.Updated, s.Fed = h.Updated, now
	if t := st.Fed[h.Head]; t != nil {
		t.apply(v)
	}
}

// applyRun takes in a check of commit: a run older than the one known of
// its name is passed over (deliveries may come out of order).
func (f *Follower) applyRun(st *pollState, commit string, r Run, now time.Time) {
	t := st.Fed[commit]
	if t == nil {
		t = &fed{Runs: map[string]Run{}}
		// What a pass asked of the commit, so those checks stay known.
		for _, s := range st.PRs {
			if s.View.Head == commit && !s.Ask {
				t.seed(s.View)
				break
			}
		}
		st.Fed[commit] = t
	}
	if old, ok := t.Runs[r.Name]; ok && old.Order > r.Order && r.Order != 0 {
		return
	}
	t.Runs[r.Name], t.At = r, now
	for _, s := range st.PRs {
		if s.View.Head == commit {
			t.apply(&s.View)
			s.Fed = now
		}
	}
}

// seed takes in the checks a view asked of the forge has.
func (t *fed) seed(v View) {
	for _, n := range v.Passed {
		t.Runs[n] = Run{Name: n, Done: true, Passed: true}
	}
	for _, c := range v.Failed {
		t.Runs[c.Name] = Run{Name: c.Name, Done: true, Failed: &c}
	}
	for _, n := range v.Running {
		t.Runs[n] = Run{Name: n}
	}
	if v.Pending && len(v.Running) == 0 {
		// Running, by no name known: until the forge is asked again.
		t.Runs[""] = Run{}
	}
	if v.Checked && len(t.Runs) == 0 {
		// Some check, of no kind the view names (one neither passed nor
		// failed: neutral, skipped).
		t.Runs["?"] = Run{Name: "?", Done: true}
	}
}

// apply sets v's checks to those told of.
func (t *fed) apply(v *View) {
	v.Pending, v.Checked, v.Failed, v.Passed, v.Running = false, len(t.Runs) > 0, nil, nil, nil
	for _, name := range slices.Sorted(maps.Keys(t.Runs)) {
		switch r := t.Runs[name]; {
		case !r.Done:
			v.Pending = true
			if name != "" {
				v.Running = append(v.Running, name)
			}
		case r.Failed != nil:
			v.Failed = append(v.Failed, *r.Failed)
		case r.Passed:
			v.Passed = append(v.Passed, name)
		}
	}
}

// pruneFed drops the commits told of longest ago, past maxFed.
func pruneFed(st *pollState) {
	if len(st.Fed) <= maxFed {
		return
	}
	commits := slices.SortedFunc(maps.Keys(st.Fed), func(a, b string) int { return st.Fed[a].At.Compare(st.Fed[b].At) })
	for _, c := range commits[:len(commits)-maxFed] {
		delete(st.Fed, c)
	}
}

// prune drops what was seen of pull requests no item follows (those of
// others deliveries told of), and what deliveries told of commits no
// pull request is at, once Trust has passed: kept between processes,
// neither may grow without end.
func (f *Follower) prune(items []Item) {
	st := f.state()
	f.mu.Lock()
	defer f.mu.Unlock()
	followed := map[int]bool{}
	for _, it := range items {
		followed[it.PR] = true
	}
	heads := map[string]bool{}
	for n, s := range st.PRs {
		if !followed[n] {
			delete(st.PRs, n)
			continue
		}
		heads[s.View.Head] = true
	}
	for c, t := range st.Fed {
		if !heads[c] && f.now().Sub(t.At) >= f.Trust {
			delete(st.Fed, c)
		}
	}
}

// told says whether s is a view deliveries keep, to be taken as it
// stands: an open pull request waiting on its checks is so only while
// deliveries told of it within f.Trust (one lost is caught up then).
func (f *Follower) told(st *pollState, s *seen) bool {
	if s.Fed.IsZero() || s.Ask || f.Trust <= 0 {
		return false
	}
	if s.View.State != "open" {
		return true
	}
	if st.Fed[s.View.Head] == nil {
		return false
	}
	settled := !s.View.Pending && s.View.Checked
	return settled || f.now().Sub(s.Fed) < f.Trust
}

// Woken is a pass on what webhooks told since the last (Apply): the
// pull requests are not listed; those deliveries named are asked about
// where the deliveries did not say it all, and the rest are taken as the
// passes saw them. A pass (Pass) is still due now and then, to catch up
// with what a lost delivery left out.
func (f *Follower) Woken(ctx context.Context) (Tally, error) {
	st := f.state()
	f.mu.Lock()
	listed := !st.Mark.IsZero()
	p := &poll{changed: map[int]Head{}, base: st.Base, mark: st.Mark}
	moved := st.BaseMoved || st.Base == ""
	f.mu.Unlock()
	if !listed {
		return f.Pass(ctx)
	}
	if moved {
		base, err := f.Trees.BaseHead(ctx)
		if err != nil {
			return f.Pass(ctx)
		}
		p.base = base
		f.mu.Lock()
		st.BaseMoved = false
		f.mu.Unlock()
	}
	return f.pass(ctx, func(context.Context) *poll { return p })
}

// StateOf is a pull request's state as it is followed (View.State):
// open, merged or closed (unmerged), from a forge's state and merged flag.
func StateOf(state string, merged bool) string {
	switch {
	case merged:
		return "merged"
	case state == "closed":
		return "closed"
	}
	return "open"
}
