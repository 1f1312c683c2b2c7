package follow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// Item is an item whose pull request cadre follows: the run and item
// that opened it.
type Item struct {
	Run, ID string
	PR      int
	Branch  string
}

// Host is the code host: where a pull request stands, and what cadre
// does on it. Every write is safe to repeat (a reply by its marker).
type Host interface {
	// View is the pull request as it stands, its reviews and comments
	// those of reviewers (empty: the repository's owners, members and
	// collaborators) and not cadre's own.
	//
	// With known (from a list of pull requests), its state and head are
	// taken from it and Mergeable is left nil: one request fewer.
	View(ctx context.Context, pr int, reviewers []string, known *Head) (View, error)
	// OpenPRs lists the repository's open pull requests.
	OpenPRs(ctx context.Context) ([]Head, error)
	// UpdatedPRs lists the pull requests, open or not, updated at or
	// after since: a pass's one look at what changed.
	UpdatedPRs(ctx context.Context, since time.Time) ([]Head, error)
	Push(ctx context.Context, dir, branch string) error
	// Reply answers a review comment's thread once per marker.
	Reply(ctx context.Context, pr int, comment int64, marker, body string) error
	RequestReview(ctx context.Context, pr int, logins []string) error
	Merge(ctx context.Context, pr int, method, head, title string) error
	Close(ctx context.Context, pr int) error
}

// Steps performs the agent and commit steps of a reaction, journaled as
// the item's steps: the engine.
type Steps interface {
	// Fix runs fix-surgeon as step id+"/fix-surgeon#1" with the note in
	// its prompt and fb as its context file's payload.feedback, then
	// commits as step id+"/commit"; a step the journal has as completed
	// is replayed, never redone.
	Fix(ctx context.Context, it Item, id, note string, fb Feedback) (Fixed, error)
}

// Fixed is what a reaction's fix-surgeon did.
type Fixed struct {
	Failed string // why, when its step failed
	Commit string // the commit made, "" when nothing changed
	Output string // its output's text, the reply's substance
}

// Trees gives items their worktrees.
type Trees interface {
	// Tree is the item's worktree on its branch, made again from the
	// branch when it is gone.
	Tree(ctx context.Context, it Item) (*workspace.Repo, error)
	// Remove removes the item's worktree and local branch.
	Remove(ctx context.Context, it Item) error
	// BaseHead fetches the base branch and returns its commit on the
	// remote: when it moves, every pull request's mergeability may have
	// changed.
	BaseHead(ctx context.Context) (string, error)
	// Mergeable says whether commit head merges into commit base without
	// conflict, computed here (git merge-tree), fetching branch for head
	// when it is not here.
	Mergeable(ctx context.Context, branch, head, base string) (bool, error)
}

// Say is told what the follower does, one line at a time; a zero Item
// for what concerns no item (a warning).
type Say func(it Item, msg string)

// Follower follows the items' pull requests, one pass at a time.
type Follower struct {
	Store  *store.Store
	Host   Host
	Steps  Steps
	Trees  Trees
	Config config.Follow
	Base   string // the base branch
	Say    Say
	// Pause journals an item as waiting for a human, saying why, and
	// tells whoever is notified; Unpause puts it back.
	Pause   func(ctx context.Context, it Item, reason string) error
	Unpause func(ctx context.Context, it Item) error
	// Crash is called at the named crash points, for tests; may be nil.
	Crash func(point string)
	// Stopped says the pass is to end before its next item (cadre
	// stop); nil never does.
	Stopped func() bool

	// Memory keeps what passes saw across processes; nil keeps it in
	// this process only.
	Memory Memory

	mu   sync.Mutex
	seen *pollState // what earlier passes saw
}

// Crash points of a reaction.
const (
	CrashMerged  = "follow-merged"  // the base merged in, before fix-surgeon
	CrashPushed  = "follow-pushed"  // the fix pushed, before the replies
	CrashReplied = "follow-replied" // replied, before the reaction is journaled
)

func (f *Follower) crash(point string) {
	if f.Crash != nil {
		f.Crash(point)
	}
}

// Tally is what a pass did.
type Tally struct {
	Followed, Reacted, Merged, Closed int
	Failed                            []string // items whose reaction failed, "item: why"
	Waiting                           []string // items waiting for a human
}

// Items lists the items whose pull request cadre opened and follows:
// the latest run's of each item, unless it ended merged or closed.
func (f *Follower) Items(ctx context.Context) ([]Item, error) {
	prs, err := f.Store.CompletedOfKind(ctx, report.KindPR)
	if err != nil {
		return nil, err
	}
	latest := map[string]Item{}
	var order []string
	for _, st := range prs {
		rec := report.ReadPublishRecord(st)
		if rec.Number == 0 {
			continue
		}
		if _, ok := latest[st.ItemID]; !ok {
			order = append(order, st.ItemID)
		}
		latest[st.ItemID] = Item{Run: st.RunID, ID: st.ItemID, PR: rec.Number, Branch: rec.Branch}
	}
	var out []Item
	for _, id := range order {
		it := latest[id]
		end, err := f.Store.GetStep(ctx, it.Run, endID(it))
		if err == nil && end.Status == store.StepCompleted {
			continue
		}
		out = append(out, it)
	}
	return out, nil
}

// Pass follows every item once: the first thing each needs.
func (f *Follower) Pass(ctx context.Context) (Tally, error) {
	items, err := f.Items(ctx)
	if err != nil {
		return Tally{}, err
	}
	var t Tally
	var p *poll
	if len(items) > 0 {
		p = f.look(ctx)
		defer f.remember(p)
	}
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return t, err
		}
		if f.Stopped != nil && f.Stopped() {
			return t, nil
		}
		t.Followed++
		if err := f.follow(ctx, it, &t, p); err != nil {
			if isJournal(err) || ctx.Err() != nil {
				return t, err
			}
			t.Failed = append(t.Failed, it.ID+": "+err.Error())
			f.say(it, "failed: "+err.Error())
		}
	}
	return t, nil
}

// follow does the one thing item it needs now: takes up a reaction a
// crash interrupted, waits for or applies a human's answer, or reads
// where its pull request stands (p: what this pass saw of them all; nil
// to ask about it alone) and acts on it.
func (f *Follower) follow(ctx context.Context, it Item, t *Tally, p *poll) error {
	h, err := f.history(ctx, it)
	if err != nil {
		return err
	}
	if h.open != nil {
		f.say(it, "taking up "+h.open.ID+", which was interrupted")
		return f.react(ctx, it, h.open.ID, h.openFeedback, t)
	}
	if h.asking != "" {
		t.Waiting = append(t.Waiting, it.ID)
		return nil
	}
	if h.rejected {
		if err := f.Unpause(ctx, it); err != nil {
			return err
		}
		if err := f.Host.Close(ctx, it.PR); err != nil {
			return fmt.Errorf("close pull request #%d: %w", it.PR, err)
		}
		t.Closed++
		return f.end(ctx, it, "closed", "a human rejected it")
	}
	if h.unpause {
		if err := f.Unpause(ctx, it); err != nil {
			return err
		}
	}
	v, err := f.view(ctx, it, p)
	if err != nil {
		return fmt.Errorf("read pull request #%d: %w", it.PR, err)
	}
	act := Decide(v, h.past, f.Config)
	if act.Do != Wait {
		f.forget(it)
	}
	switch act.Do {
	case Merged:
		t.Merged++
		return f.end(ctx, it, "merged", "")
	case Closed:
		t.Closed++
		return f.end(ctx, it, "closed", "closed unmerged")
	case Merge:
		if err := f.Host.Merge(ctx, it.PR, f.Config.Merge, v.Head, v.Title); err != nil {
			return fmt.Errorf("merge pull request #%d: %w", it.PR, err)
		}
		f.say(it, fmt.Sprintf("merged pull request #%d (%s)", it.PR, f.Config.Merge))
		t.Merged++
		return f.end(ctx, it, "merged", "")
	case Pause:
		t.Waiting = append(t.Waiting, it.ID)
		return f.pause(ctx, it, act.Kind, h)
	case React:
		id := fmt.Sprintf("%s/follow/%s#%d", it.ID, act.Kind, h.tries[act.Kind]+1)
		if err := f.record(ctx, it, id+"/feedback", "feedback", act.Feedback); err != nil {
			return err
		}
		return f.react(ctx, it, id, act.Feedback, t)
	}
	return nil
}

// react performs reaction id for feedback fb, every part once: the base
// merged in (conflict), fix-surgeon's fix and its commit, the push, a
// reply on each comment's thread and the review asked again.
func (f *Follower) react(ctx context.Context, it Item, id string, fb Feedback, t *Tally) error {
	rec := store.Step{RunID: it.Run, ItemID: it.ID, ID: id, Kind: KindReaction}
	if err := f.Store.StartStep(ctx, rec); err != nil && !errors.Is(err, store.ErrCompleted) {
		return journalErr(err)
	}
	f.say(it, fmt.Sprintf("%s on pull request #%d: %s", fb.Kind, it.PR, id))
	tree, err := f.Trees.Tree(ctx, it)
	if err != nil {
		return f.fail(ctx, rec, err, t)
	}
	fixNeeded := fb.Kind != Conflict
	if fb.Kind == Conflict {
		conflicted, err := f.mergeBase(ctx, tree, id, it.Run, it.Branch)
		if err != nil {
			return f.fail(ctx, rec, err, t)
		}
		fb.Conflicted, fixNeeded = conflicted, len(conflicted) > 0
		f.crash(CrashMerged)
	}
	res := reactionResult{Feedback: fb}
	if fixNeeded {
		fixed, err := f.Steps.Fix(ctx, it, id, fb.Text(it.PR), fb)
		if err != nil {
			return err
		}
		if fixed.Failed != "" {
			return f.fail(ctx, rec, errors.New("fix-surgeon failed: "+fixed.Failed), t)
		}
		if fixed.Commit == "" && fb.Kind != ChangesRequested {
			return f.fail(ctx, rec, errors.New("fix-surgeon changed nothing"), t)
		}
		res.Commit, res.Output = fixed.Commit, fixed.Output
	}
	if err := f.Host.Push(ctx, tree.Dir, it.Branch); err != nil {
		return f.fail(ctx, rec, fmt.Errorf("push %s: %w", it.Branch, err), t)
	}
	if head, err := tree.Head(ctx); err == nil {
		res.Pushed = head
	}
	f.crash(CrashPushed)
	if fb.Kind == ChangesRequested {
		if err := f.answer(ctx, it, fb, res); err != nil {
			return f.fail(ctx, rec, err, t)
		}
	}
	f.crash(CrashReplied)
	rec.Status = store.StepCompleted
	rec.Result, _ = json.Marshal(res)
	if err := f.Store.FinishStep(ctx, rec); err != nil {
		return journalErr(err)
	}
	t.Reacted++
	f.say(it, fmt.Sprintf("%s answered: pushed %s", fb.Kind, short(res.Pushed)))
	return nil
}

// answer replies on each comment's thread saying what changed, once (by
// its marker), and asks the reviewers to look again.
func (f *Follower) answer(ctx context.Context, it Item, fb Feedback, res reactionResult) error {
	what := "No code change was needed; see the explanation below."
	if res.Commit != "" {
		what = "Addressed in " + res.Commit + "."
	}
	if s := summary(res.Output); s != "" {
		what += "\n\n" + s
	}
	reviewers := map[string]bool{}
	for _, c := range fb.Comments {
		marker := fmt.Sprintf("cadre:%s:%s:reply-%d", it.Run, it.ID, c.ID)
		if err := f.Host.Reply(ctx, it.PR, c.ID, marker, what); err != nil {
			return fmt.Errorf("reply to comment %d: %w", c.ID, err)
		}
		reviewers[c.Author] = true
	}
	if fb.Review != nil {
		reviewers[fb.Review.Author] = true
	}
	logins := slices.Sorted(maps.Keys(reviewers))
	if len(logins) == 0 {
		return nil
	}
	if err := f.Host.RequestReview(ctx, it.PR, logins); err != nil {
		return fmt.Errorf("request review: %w", err)
	}
	return nil
}

// summary is the first lines of fix-surgeon's output, for a reply.
func summary(out string) string {
	out = strings.TrimSpace(out)
	if i := strings.Index(out, "SIGNAL BLOCK"); i >= 0 {
		out = strings.TrimSpace(out[:i])
	}
	lines := strings.Split(out, "\n")
	if len(lines) > 12 {
		lines = append(lines[:12], "…")
	}
	return strings.Join(lines, "\n")
}

// fail ends reaction rec failed, its round used.
func (f *Follower) fail(ctx context.Context, rec store.Step, cause error, t *Tally) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rec.Status, rec.Error = store.StepFailed, cause.Error()
	if err := f.Store.FinishStep(ctx, rec); err != nil {
		return journalErr(err)
	}
	return cause
}

// pause asks a human about reaction k, out of rounds: a human step
// cadre approve answers.
func (f *Follower) pause(ctx context.Context, it Item, k Kind, h history) error {
	id := fmt.Sprintf("%s/follow/%s/human#%d", it.ID, k, h.asked+1)
	reason := fmt.Sprintf("%s is out of rounds (%d) on pull request #%d: cadre approve %s %s grants them again, --reject closes it",
		k, Rounds(f.Config, k), it.PR, it.Run, it.ID)
	rec := store.Step{RunID: it.Run, ItemID: it.ID, ID: id, Kind: "human"}
	if err := f.Store.StartStep(ctx, rec); err != nil && !errors.Is(err, store.ErrCompleted) {
		return journalErr(err)
	}
	f.say(it, "waits for a human: "+reason)
	return f.Pause(ctx, it, reason)
}

// end journals the item's end: merged (its worktree and branch removed)
// or closed.
func (f *Follower) end(ctx context.Context, it Item, state, why string) error {
	if state == "merged" {
		if err := f.Trees.Remove(ctx, it); err != nil {
			f.say(it, "remove worktree: "+err.Error())
		}
	}
	if err := f.record(ctx, it, endID(it), KindEnd, endResult{State: state, PR: it.PR, Why: why}); err != nil {
		return err
	}
	msg := fmt.Sprintf("pull request #%d %s", it.PR, state)
	if why != "" {
		msg += ": " + why
	}
	f.say(it, msg)
	return nil
}

// mergeBase merges the base branch into the tree's branch, unless it is
// in already; it returns the files left conflicted (the merge stays in
// progress for fix-surgeon to resolve and the commit step to conclude).
func (f *Follower) mergeBase(ctx context.Context, tree *workspace.Repo, id, run, branch string) ([]string, error) {
	if tree.Merging(ctx) {
		return tree.Conflicted(ctx) // a crash left the merge in progress
	}
	base, err := f.Trees.BaseHead(ctx)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", f.Base, err)
	}
	if _, err := tree.Git(ctx, "merge-base", "--is-ancestor", base, "HEAD"); err == nil {
		return nil, nil // merged in before a crash
	}
	return tree.Merge(ctx, base, "Merge "+f.Base+" into "+branch, workspace.Mark{Step: id + "/merge", Run: run})
}

func (f *Follower) say(it Item, msg string) {
	if f.Say != nil {
		f.Say(it, msg)
	}
}
