package follow

import (
	"cmp"
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
	// Logs fills in the log tail of each failed check that has one; a
	// log that cannot be read is left out and named in warnings.
	Logs(ctx context.Context, checks []Check) (out []Check, warnings []string)
	Push(ctx context.Context, dir, branch string) error
	// Reply answers a review comment's thread once per marker.
	Reply(ctx context.Context, pr int, comment int64, marker, body string) error
	RequestReview(ctx context.Context, pr int, logins []string) error
	// Merge merges pr by method provided its head is still head: one
	// that moved, or that the code host is to move before it merges (a
	// GitLab rebase), is ErrHeadMoved.
	Merge(ctx context.Context, pr int, method, head, title string) error
	Close(ctx context.Context, pr int) error
	// Comment posts body on the pull request once per marker.
	Comment(ctx context.Context, pr int, marker, body string) error
	// Label puts label on the pull request, or takes it off.
	Label(ctx context.Context, pr int, label string, on bool) error
}

// ErrHeadMoved is a merge refused because the head moved since it was
// seen, or not made because the code host is moving it: it is looked at
// again at the next pass, no failure.
var ErrHeadMoved = errors.New("the head moved since it was seen")

// Verifier checks a reaction's tree before its push: follow.verify's
// commands, run confined as the item's, journaled as step id.
type Verifier interface {
	// Verify says why the tree does not pass ("" when it does).
	Verify(ctx context.Context, it Item, id string, names []string) (string, error)
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
	Result string // its signal's result: only SUCCESS is pushed
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
	Verify Verifier
	Config config.Follow
	Base   string // the base branch
	Say    Say
	// Warn journals a warning about the item (a warning event).
	Warn func(it Item, msg string)
	// Pause journals an item as waiting for a human, saying why, and
	// tells whoever is notified; Unpause puts it back; Paused says
	// whether it waits (nil: always, so Unpause is called each time).
	Pause   func(ctx context.Context, it Item, reason string) error
	Unpause func(ctx context.Context, it Item) error
	Paused  func(ctx context.Context, it Item) (bool, error)
	// Ending, when set, hears an item's end (merged or closed) before it
	// is journaled, so what it does is done again, not lost, should the
	// process die between the two: it must be idempotent. A failure is
	// the hook's to report; the end is journaled whatever it says.
	Ending func(ctx context.Context, it Item, state string)
	// Now is the time; nil is time.Now.
	Now func() time.Time
	// Crash is called at the named crash points, for tests; may be nil.
	Crash func(point string)
	// Stopped says the pass is to end before its next item (cadre
	// stop); nil never does.
	Stopped func() bool

	// Memory keeps what passes saw across processes; nil keeps it in
	// this process only.
	Memory Memory
	// Trust is how long what webhooks told of a pull request waiting on
	// its checks is taken as it stands without asking (Apply); zero
	// takes nothing from them.
	Trust time.Duration

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
	return f.pass(ctx, f.look)
}

// pass follows every item once, look saying what changed since the last.
func (f *Follower) pass(ctx context.Context, look func(context.Context) *poll) (Tally, error) {
	items, err := f.Items(ctx)
	if err != nil {
		return Tally{}, err
	}
	var t Tally
	var p *poll
	if len(items) > 0 {
		p = look(ctx)
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
	f.prune(items)
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
	if h.open != nil || h.asking != "" || h.rejected {
		// Its pull request is not looked at now, though this pass may
		// have listed it as changed (a crashed reaction's push): what was
		// seen of it is not to be taken as it stands at the next pass.
		f.forget(it)
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
		return f.reject(ctx, it, h, t)
	}
	if h.unpause {
		if err := f.resume(ctx, it); err != nil {
			return err
		}
	}
	v, told, err := f.view(ctx, it, p)
	if err != nil {
		return fmt.Errorf("read pull request #%d: %w", it.PR, err)
	}
	base := ""
	if p != nil {
		base = p.base
	}
	act := Decide(v, h.past, f.Config, base, f.unchecked(it, v))
	if act.Do == Merge && told {
		// A merge goes by what the forge says now, not by deliveries: one
		// lost or out of order must not merge a head that is not green.
		if v, _, err = f.fresh(ctx, it, p, nil); err != nil {
			return fmt.Errorf("read pull request #%d: %w", it.PR, err)
		}
		act = Decide(v, h.past, f.Config, base, f.unchecked(it, v))
	}
	if act.Do != Wait {
		f.forget(it)
	}
	switch act.Do {
	case Wait:
		f.tell(it, act.Why)
	case Merged:
		t.Merged++
		return f.end(ctx, it, "merged", "")
	case Closed:
		t.Closed++
		return f.end(ctx, it, "closed", "closed unmerged")
	case Merge:
		return f.merge(ctx, it, v, t)
	case Pause:
		t.Waiting = append(t.Waiting, it.ID)
		return f.pause(ctx, it, act, h)
	case React:
		return f.begin(ctx, it, act.Feedback, h, t)
	}
	return nil
}

// begin starts a reaction to fb: its input completed (the failed checks'
// logs, the base's commit, a person's note) and journaled first, so a
// crash takes it up on the same input.
func (f *Follower) begin(ctx context.Context, it Item, fb Feedback, h history, t *Tally) error {
	id := fmt.Sprintf("%s/follow/%s#%d", it.ID, fb.Kind, h.tries[fb.Kind]+1)
	fb.Note = h.note
	// What an earlier round that was killed or failed left in the tree
	// (a merge begun, an agent's edits) is not this round's to build on.
	if tree, err := f.Trees.Tree(ctx, it); err == nil {
		tidy(ctx, tree)
	}
	switch fb.Kind {
	case CIFailed:
		var warnings []string
		fb.Checks, warnings = f.Host.Logs(ctx, fb.Checks)
		for _, w := range warnings {
			f.warn(it, w)
		}
	case Conflict:
		if fb.Base.SHA == "" {
			base, err := f.Trees.BaseHead(ctx)
			if err != nil {
				return fmt.Errorf("fetch %s: %w", f.Base, err)
			}
			fb.Base.SHA = base
		}
	}
	if err := f.record(ctx, it, id+"/feedback", "feedback", fb); err != nil {
		return err
	}
	return f.react(ctx, it, id, fb, t)
}

// merge merges the pull request at the head v saw; a head that moved
// since, or that the code host is moving, is looked at again at the next
// pass.
func (f *Follower) merge(ctx context.Context, it Item, v View, t *Tally) error {
	err := f.Host.Merge(ctx, it.PR, f.Config.Merge, v.Head, v.Title)
	if errors.Is(err, ErrHeadMoved) {
		// The error says how: another push, or the code host asked to
		// bring the base in first (a GitLab rebase).
		f.say(it, fmt.Sprintf("pull request #%d not merged at %s: %v; looking again at the next pass", it.PR, Short(v.Head), err))
		return nil
	}
	if err != nil {
		return fmt.Errorf("merge pull request #%d: %w", it.PR, err)
	}
	f.say(it, fmt.Sprintf("merged pull request #%d at %s (%s)", it.PR, Short(v.Head), f.Config.Merge))
	t.Merged++
	return f.end(ctx, it, "merged", "")
}

// react performs reaction id for feedback fb, every part once: the base
// merged in (conflict), fix-surgeon's fix and its commit, the checks of
// what is to be pushed, the push, a reply on each comment's thread and
// the review asked again. A reaction whose tree does not pass its checks
// pushes nothing and replies nothing: its round is used.
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
	before := f.startOf(ctx, tree, fb)
	fixNeeded := fb.Kind != Conflict
	if fb.Kind == Conflict {
		conflicted, err := f.mergeBase(ctx, tree, id, it, fb)
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
		why := ""
		switch {
		case fixed.Failed != "":
			why = "fix-surgeon failed: " + fixed.Failed
		case fixed.Result != "SUCCESS":
			why = fmt.Sprintf("fix-surgeon answered %s, not SUCCESS", cmp.Or(fixed.Result, "no result"))
		case fixed.Commit == "" && fb.Kind != ChangesRequested:
			why = "fix-surgeon changed nothing"
		}
		if why != "" {
			return f.refuse(ctx, it, rec, tree, before, why, t)
		}
		res.Commit, res.Output = fixed.Commit, fixed.Output
	}
	head, err := tree.Head(ctx)
	if err != nil {
		return f.fail(ctx, rec, err, t)
	}
	if head != before {
		why, err := f.check(ctx, it, tree, id, fb, before, head)
		if err != nil {
			return err
		}
		if why != "" {
			return f.refuse(ctx, it, rec, tree, before, why, t)
		}
		if err := f.Host.Push(ctx, tree.Dir, it.Branch); err != nil {
			return f.fail(ctx, rec, fmt.Errorf("push %s: %w", it.Branch, err), t)
		}
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
	if res.Pushed == "" {
		f.say(it, fmt.Sprintf("%s answered: nothing to push (the branch stays at %s)", fb.Kind, Short(head)))
	} else {
		f.say(it, fmt.Sprintf("%s answered: pushed %s", fb.Kind, Short(res.Pushed)))
	}
	return nil
}

// startOf is the commit a reaction starts from: the head it answers when
// the tree has it, else the tree's own head.
func (f *Follower) startOf(ctx context.Context, tree *workspace.Repo, fb Feedback) string {
	if fb.Head != "" {
		if _, err := tree.Git(ctx, "cat-file", "-e", fb.Head+"^{commit}"); err == nil {
			return fb.Head
		}
	}
	head, _ := tree.Head(ctx)
	return head
}

// check says why the tree's head may not be pushed ("" when it may): a
// merge not concluded, an unmerged path, a conflict-marker line added
// since before (the base's own left aside), or follow.verify's commands
// failing.
func (f *Follower) check(ctx context.Context, it Item, tree *workspace.Repo, id string, fb Feedback, before, head string) (string, error) {
	if tree.Merging(ctx) {
		return "the merge of the base is not concluded", nil
	}
	if files, err := tree.Conflicted(ctx); err != nil || len(files) > 0 {
		return "unmerged paths: " + strings.Join(files, ", "), err
	}
	var others []string
	if fb.Kind == Conflict && fb.Base != nil && fb.Base.SHA != "" {
		others = append(others, fb.Base.SHA)
	}
	marks, err := tree.ConflictMarkers(ctx, before, head, others...)
	if err != nil {
		return "", err
	}
	if len(marks) > 0 {
		if len(marks) > 5 {
			marks = append(marks[:5], "…")
		}
		return "conflict markers left: " + strings.Join(marks, "; "), nil
	}
	if len(f.Config.Verify) == 0 || f.Verify == nil {
		return "", nil
	}
	why, err := f.Verify.Verify(ctx, it, id+"/verify", f.Config.Verify)
	if why != "" {
		why = "follow.verify failed: " + why
	}
	return why, err
}

// refuse ends reaction rec failed without pushing: the tree is put back
// at before (what it made kept under refs/cadre/refused/, for a person to
// look at), so the next round starts clean.
func (f *Follower) refuse(ctx context.Context, it Item, rec store.Step, tree *workspace.Repo, before, why string, t *Tally) error {
	if tree.Merging(ctx) {
		tree.Git(ctx, "merge", "--abort")
	}
	if head, err := tree.Head(ctx); err == nil && head != before {
		ref := "refs/cadre/refused/" + strings.NewReplacer("#", "-", "/", "-").Replace(rec.ID)
		if _, err := tree.Git(ctx, "update-ref", ref, head); err == nil {
			why += " (the refused commit is kept as " + ref + ")"
		}
	}
	if before != "" {
		if _, err := tree.Git(ctx, "reset", "-q", "--hard", before); err != nil {
			why += "; resetting the tree failed: " + err.Error()
		}
	}
	f.say(it, "nothing pushed: "+why)
	return f.fail(ctx, rec, errors.New(why), t)
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

// pause asks a human about act's reaction: a human step cadre approve
// answers. The pull request says so first (one comment, the pause label),
// so a crash once the step began cannot leave it unsaid.
func (f *Follower) pause(ctx context.Context, it Item, act Action, h history) error {
	n := h.asked + 1
	id := fmt.Sprintf("%s/follow/%s/human#%d", it.ID, act.Kind, n)
	grant := "grants its rounds again"
	if act.Kind == NoChecks {
		grant = "waits for checks again"
	}
	reason := fmt.Sprintf("%s on pull request #%d: cadre approve %s %s [--note TEXT] %s, --reject closes it",
		act.Why, it.PR, it.Run, it.ID, grant)
	body := fmt.Sprintf("cadre is waiting for a person: %s.\n\n"+
		"- To go on: `cadre approve %s %s --note \"what to do\"` (it %s; the note reaches the fix as written).\n"+
		"- To close this pull request: `cadre approve --reject %s %s --note \"why\"`.",
		act.Why, it.Run, it.ID, grant, it.Run, it.ID)
	if err := f.Host.Comment(ctx, it.PR, fmt.Sprintf("cadre:%s:%s:paused-%d", it.Run, it.ID, n), body); err != nil {
		return fmt.Errorf("comment on pull request #%d: %w", it.PR, err)
	}
	if err := f.Host.Label(ctx, it.PR, f.Config.PauseLabel, true); err != nil {
		return fmt.Errorf("label pull request #%d: %w", it.PR, err)
	}
	rec := store.Step{RunID: it.Run, ItemID: it.ID, ID: id, Kind: "human"}
	if err := f.Store.StartStep(ctx, rec); err != nil && !errors.Is(err, store.ErrCompleted) {
		return journalErr(err)
	}
	f.say(it, "waits for a human: "+reason)
	return f.Pause(ctx, it, reason)
}

// resume puts an item a human answered back to following, once: the
// pause label comes off, then the item is journaled running.
func (f *Follower) resume(ctx context.Context, it Item) error {
	if f.Paused != nil {
		paused, err := f.Paused(ctx, it)
		if err != nil || !paused {
			return err
		}
	}
	if err := f.Host.Label(ctx, it.PR, f.Config.PauseLabel, false); err != nil {
		return fmt.Errorf("unlabel pull request #%d: %w", it.PR, err)
	}
	return f.Unpause(ctx, it)
}

// reject closes the pull request a human rejected, saying why on it, and
// ends the item closed.
func (f *Follower) reject(ctx context.Context, it Item, h history, t *Tally) error {
	if err := f.resume(ctx, it); err != nil {
		return err
	}
	body := "A person rejected going on with this pull request; cadre closes it."
	if h.rejectNote != "" {
		body += "\n\n> " + strings.ReplaceAll(h.rejectNote, "\n", "\n> ")
	}
	if err := f.Host.Comment(ctx, it.PR, fmt.Sprintf("cadre:%s:%s:rejected", it.Run, it.ID), body); err != nil {
		return fmt.Errorf("comment on pull request #%d: %w", it.PR, err)
	}
	if err := f.Host.Close(ctx, it.PR); err != nil {
		return fmt.Errorf("close pull request #%d: %w", it.PR, err)
	}
	t.Closed++
	return f.end(ctx, it, "closed", "a human rejected it")
}

// end journals the item's end: merged (its worktree and branch removed)
// or closed.
func (f *Follower) end(ctx context.Context, it Item, state, why string) error {
	if f.Ending != nil {
		f.Ending(ctx, it, state)
	}
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

// mergeBase merges the base's commit fb names into the tree's branch,
// unless it is in already; it returns the files left conflicted (the
// merge stays in progress for fix-surgeon to resolve and the commit step
// to conclude).
func (f *Follower) mergeBase(ctx context.Context, tree *workspace.Repo, id string, it Item, fb Feedback) ([]string, error) {
	if tree.Merging(ctx) {
		return tree.Conflicted(ctx) // a crash left the merge in progress
	}
	base := fb.Base.SHA
	if _, err := tree.Git(ctx, "cat-file", "-e", base+"^{commit}"); err != nil {
		if _, err := f.Trees.BaseHead(ctx); err != nil {
			return nil, fmt.Errorf("fetch %s: %w", f.Base, err)
		}
	}
	if _, err := tree.Git(ctx, "merge-base", "--is-ancestor", base, "HEAD"); err == nil {
		return nil, nil // merged in before a crash
	}
	return tree.Merge(ctx, base, "Merge "+f.Base+" into "+it.Branch, workspace.Mark{Step: id + "/merge", Run: it.Run})
}

// tidy puts tree back at its own head: a merge in progress aborted,
// changes to tracked files and untracked files dropped (ignored ones, a
// build's output, stay).
func tidy(ctx context.Context, tree *workspace.Repo) {
	if tree.Merging(ctx) {
		tree.Git(ctx, "merge", "--abort")
	}
	tree.Git(ctx, "reset", "-q", "--hard")
	tree.Git(ctx, "clean", "-q", "-f", "-d")
}

// tell says why a pull request that could be merged is not, once per
// change of reason.
func (f *Follower) tell(it Item, why string) {
	st := f.state()
	f.mu.Lock()
	if st.Said == nil {
		st.Said = map[int]string{}
	}
	same := st.Said[it.PR] == why
	if why == "" {
		delete(st.Said, it.PR)
	} else {
		st.Said[it.PR] = why
	}
	f.mu.Unlock()
	if !same && why != "" {
		f.say(it, fmt.Sprintf("pull request #%d is not merged: %s", it.PR, why))
	}
}

func (f *Follower) warn(it Item, msg string) {
	f.say(it, "warning: "+msg)
	if f.Warn != nil {
		f.Warn(it, msg)
	}
}

func (f *Follower) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

func (f *Follower) say(it Item, msg string) {
	if f.Say != nil {
		f.Say(it, msg)
	}
}
