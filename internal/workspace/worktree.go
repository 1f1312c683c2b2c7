package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/cadre-dev/cadre/internal/runlock"
)

// WorktreesDir holds one worktree per item, under the state directory.
const WorktreesDir = "worktrees"

// BranchPrefix starts every branch cadre creates.
const BranchPrefix = "cadre/"

const maxSlug = 40

// Slug turns untrusted text (an issue title) into a short branch-safe word
// list: lower-case ASCII letters, digits and single dashes, at most 40
// bytes, cut at a dash. Anything else (punctuation, control and bidi
// characters, non-ASCII letters, option-like prefixes, dots) becomes a
// separator, so no title can smuggle a git option, a path component or a
// ref keyword into a branch name.
func Slug(title string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(title) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() > maxSlug+1 {
				break
			}
			continue
		}
		dash = true
	}
	s := b.String()
	if len(s) > maxSlug {
		s = s[:maxSlug]
		if i := strings.LastIndexByte(s, '-'); i > maxSlug/2 {
			s = s[:i]
		}
	}
	return strings.Trim(s, "-")
}

// maxItemID bounds an item id, which names a directory and a branch.
const maxItemID = 100

// CheckItemID accepts ids that are safe as a path component, a branch
// component and a step id prefix: letters, digits, '.', '_', '-', not
// starting with a dot or dash, no "..", not ending in ".lock", at most 100
// bytes. A refusal names the one rule the id breaks, not all of them.
func CheckItemID(id string) error {
	if why := itemIDFault(id); why != "" {
		return fmt.Errorf("item id %q is not usable: %s", id, why)
	}
	return nil
}

// itemIDFault says which rule of CheckItemID id breaks, or "".
func itemIDFault(id string) string {
	switch {
	case id == "":
		return "it is empty"
	case len(id) > maxItemID:
		return fmt.Sprintf("it is %d bytes long, over %d", len(id), maxItemID)
	case id[0] == '.' || id[0] == '-':
		return fmt.Sprintf("it starts with %q (start with a letter or digit)", id[:1])
	}
	for _, r := range id {
		if !itemIDRune(r) {
			return fmt.Sprintf("it holds %q (use only letters, digits, '.', '_' and '-')", r)
		}
	}
	switch {
	case strings.Contains(id, ".."):
		return `it holds ".."`
	case strings.HasSuffix(id, ".lock"):
		return `it ends in ".lock", which git refuses in a branch name`
	}
	return ""
}

func itemIDRune(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-'
}

// BranchName is the branch of an item: cadre/<item>-<slug of title>.
func BranchName(item, title string) string {
	name := BranchPrefix + strings.ToLower(item)
	if s := Slug(title); s != "" {
		name += "-" + s
	}
	return name
}

// ErrDirtyWorktree is wrapped when an item's leftover worktree has
// uncommitted changes that the current run does not own.
var ErrDirtyWorktree = errors.New("leftover worktree has uncommitted changes")

// Worktrees creates and finds item worktrees of one repository. Creating
// worktrees is serialised: concurrent `git worktree add` calls contend for
// the same administrative files.
type Worktrees struct {
	repo *Repo
	dir  string // <root>/.cadre/worktrees
	mu   sync.Mutex

	poolMu sync.Mutex
	pool   *pool // prepared worktrees (StartPool); nil when off
}

// NewWorktrees manages the item worktrees of repo.
func NewWorktrees(repo *Repo) *Worktrees {
	return &Worktrees{repo: repo, dir: filepath.Join(repo.Dir, StateDir, WorktreesDir)}
}

// Exclusive runs fn while no worktree is being created in this process.
func (w *Worktrees) Exclusive(fn func() error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fn()
}

// Path is where item's worktree lives.
func (w *Worktrees) Path(item string) string { return filepath.Join(w.dir, item) }

// EnsureOptions say how Ensure treats an item's worktree.
type EnsureOptions struct {
	// AllowDirty reuses a worktree with uncommitted changes (the run's own).
	AllowDirty bool
	// Untrusted: the item's tree gets no filter driver run on it, from its
	// checkout on (see Repo.Untrusted).
	Untrusted bool
}

// Ensure returns the worktree of item on branch, creating it from base when
// it does not exist. An existing worktree is reused; if it has uncommitted
// changes and opt.AllowDirty is false, Ensure fails with ErrDirtyWorktree
// naming the files (they are leftovers of an earlier run, not this one's
// work).
func (w *Worktrees) Ensure(ctx context.Context, item, branch, base string, opt EnsureOptions) (*Repo, error) {
	if err := w.checkNames(ctx, item, branch); err != nil {
		return nil, err
	}
	path := w.Path(item)
	repo := w.repo
	if opt.Untrusted {
		repo = repo.Untrusted()
	}
	if wt := w.takePrepared(ctx, repo, item, branch, base); wt != nil {
		return wt, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.clearHalfMade(ctx, item); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(path, ".git")); err == nil {
		return reuse(ctx, repo, path, branch, opt.AllowDirty)
	}
	return w.create(ctx, repo, item, branch, base)
}

// checkNames refuses an item id that cannot name a worktree and a branch
// name git would refuse. The names cadre makes pass plainBranch; git
// judges any other.
func (w *Worktrees) checkNames(ctx context.Context, item, branch string) error {
	if err := CheckItemID(item); err != nil {
		return err
	}
	if !plainBranch(branch) {
		if _, err := w.repo.Git(ctx, "check-ref-format", "--branch", branch); err != nil {
			return fmt.Errorf("branch name %q for item %s is not valid: %w", branch, item, err)
		}
	}
	return nil
}

// takePrepared hands over a prepared worktree of the pool as item's on
// branch, made from base, when the pool is on, item has no worktree, and none of it is
// half-made (that is cleared away first); nil otherwise. It runs outside
// w.mu, which the pool holds while it prepares the next one.
func (w *Worktrees) takePrepared(ctx context.Context, repo *Repo, item, branch, base string) *Repo {
	w.poolMu.Lock()
	p := w.pool
	w.poolMu.Unlock()
	if p == nil {
		return nil
	}
	if _, err := os.Lstat(w.making(item)); err == nil {
		return nil
	}
	path := w.Path(item)
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return p.take(ctx, repo, branch, base, path)
}

// reuse returns the existing worktree at path, which must be on branch
// and, unless allowDirty, have no uncommitted changes.
func reuse(ctx context.Context, repo *Repo, path, branch string, allowDirty bool) (*Repo, error) {
	wt := repo.child(path)
	repo.inherit(ctx, wt)
	cur, err := wt.Branch(ctx)
	if err != nil {
		return nil, fmt.Errorf("worktree %s: %w", path, err)
	}
	if strings.TrimSpace(cur) != branch {
		return nil, fmt.Errorf("worktree %s is on branch %s, not %s: remove it with cadre worktrees prune --force", path, strings.TrimSpace(cur), branch)
	}
	if !allowDirty {
		dirty, err := wt.Dirty(ctx)
		if err != nil {
			return nil, err
		}
		if len(dirty) > 0 {
			return nil, fmt.Errorf("%w in %s (%s): commit or discard them, or remove it with cadre worktrees prune --force", ErrDirtyWorktree, path, listPaths(dirty))
		}
	}
	return wt, nil
}

// create makes item's worktree on branch, from base when the branch is
// new. It is marked while git makes it: a creation cut off (a cancelled
// context kills git, Ctrl-C, a crash) leaves a worktree nobody worked in,
// which the next Ensure makes again. Only what git makes is marked, so a
// directory of anyone else's at the path is never taken for one. The
// mark stays when ctx ended the creation, so the next Ensure clears what
// git left. The caller holds w.mu.
func (w *Worktrees) create(ctx context.Context, repo *Repo, item, branch, base string) (*Repo, error) {
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", w.dir, err)
	}
	path := w.Path(item)
	marked := false
	if empty(path) {
		if err := os.WriteFile(w.making(item), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("create worktree for %s: %w", item, err)
		}
		marked = true
	}
	unmark := func() {
		if marked {
			os.Remove(w.making(item))
		}
	}
	if err := addWorktree(ctx, repo, item, branch, base, path); err != nil {
		if ctx.Err() == nil {
			unmark() // git failed whole and cleared what it made
		}
		return nil, err
	}
	unmark()
	wt := repo.child(path)
	repo.inherit(ctx, wt)
	return wt, nil
}

// addWorktree has git make item's worktree at path on branch. When that
// fails, stale registrations are pruned (the directory may have been
// deleted by hand) and it tries once more.
func addWorktree(ctx context.Context, repo *Repo, item, branch, base, path string) error {
	if err := gitWorktreeAdd(ctx, repo, branch, base, path); err == nil {
		return nil
	}
	if _, err := repo.Git(ctx, "worktree", "prune"); err != nil {
		return err
	}
	if err := gitWorktreeAdd(ctx, repo, branch, base, path); err != nil {
		return fmt.Errorf("create worktree for %s: %w", item, err)
	}
	return nil
}

// gitWorktreeAdd adds a worktree at path on a new branch made from base,
// or, when branch exists (a resume), on branch. The common case goes
// first, so a fresh worktree costs one git process. --no-track: a branch
// made from a remote-tracking base would otherwise write its upstream into
// .git/config, which cadre watches for changes while agents run.
func gitWorktreeAdd(ctx context.Context, repo *Repo, branch, base, path string) error {
	_, err := repo.Git(ctx, "worktree", "add", "--quiet", "--no-track", "-b", branch, "--", path, base)
	if err == nil {
		return nil
	}
	if _, verr := repo.Git(ctx, "rev-parse", "--verify", "-q", "refs/heads/"+branch); verr == nil {
		_, err = repo.Git(ctx, "worktree", "add", "--quiet", "--", path, branch)
	}
	return err
}

// making is the file that marks item's worktree as being made.
func (w *Worktrees) making(item string) string {
	return filepath.Join(w.dir, "."+item+".making")
}

// empty says whether path is missing or an empty directory: where git
// makes a worktree.
func empty(path string) bool {
	entries, err := os.ReadDir(path)
	return errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0)
}

// clearHalfMade removes what a cut-off creation of item's worktree left:
// its directory (a partial checkout, or none) and git's registration of
// it, which git keeps locked while it makes a worktree. A creation under
// way in another live process is left alone. The caller holds w.mu.
func (w *Worktrees) clearHalfMade(ctx context.Context, item string) error {
	mark := w.making(item)
	data, err := os.ReadFile(mark)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("worktree of %s: %w", item, err)
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid != os.Getpid() && runlock.Alive(pid) {
		return fmt.Errorf("worktree of %s: process %d is making it: wait for it, or stop it", item, pid)
	}
	path := w.Path(item)
	w.unlockAdmins(ctx, func(gitdir string) bool { return filepath.Dir(gitdir) == path })
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("remove half-made worktree %s: %w", path, err)
	}
	if _, err := w.repo.Git(ctx, "worktree", "prune"); err != nil {
		return fmt.Errorf("remove half-made worktree %s: %w", path, err)
	}
	if err := os.Remove(mark); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("worktree of %s: %w", item, err)
	}
	return nil
}

func listPaths(paths []string) string {
	const show = 5
	if len(paths) <= show {
		return strings.Join(paths, ", ")
	}
	return strings.Join(paths[:show], ", ") + fmt.Sprintf(" and %d more", len(paths)-show)
}

// Worktree describes one item worktree.
type Worktree struct {
	Item   string
	Path   string
	Branch string
	Dirty  []string
	Ahead  int  // commits on the branch not in base
	Merged bool // the branch's commits are all in base
	// Unregistered: a directory in the worktrees directory that git does
	// not list as a worktree (its registration deleted, a copy, a creation
	// cut short). Git can tell nothing of its files, which Dirty lists
	// (its top level) as all uncommitted.
	Unregistered bool
}

// List describes every item worktree, relative to base, and every other
// entry of the worktrees directory, as Unregistered.
func (w *Worktrees) List(ctx context.Context, base string) ([]Worktree, error) {
	out, err := w.repo.Git(ctx, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var list []Worktree
	var cur *Worktree
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "worktree "):
			p := strings.TrimPrefix(line, "worktree ")
			cur = nil
			if filepath.Dir(p) == w.dir {
				list = append(list, Worktree{Item: filepath.Base(p), Path: p})
				cur = &list[len(list)-1]
			}
		case strings.HasPrefix(line, "branch ") && cur != nil:
			cur.Branch = strings.TrimPrefix(strings.TrimPrefix(line, "branch "), "refs/heads/")
		}
	}
	for i := range list {
		wt := &Repo{Dir: list[i].Path}
		if _, err := os.Stat(list[i].Path); err != nil {
			continue
		}
		list[i].Dirty, _ = wt.Dirty(ctx)
		if list[i].Branch == "" {
			continue
		}
		n, err := w.repo.Git(ctx, "rev-list", "--count", base+".."+list[i].Branch)
		if err == nil {
			fmt.Sscan(strings.TrimSpace(n), &list[i].Ahead)
		}
		list[i].Merged = err == nil && list[i].Ahead == 0
	}
	return w.unregistered(list)
}

// unregistered adds to list the entries of the worktrees directory that it
// lacks, but for hidden ones (the pool, marks), which no item id names.
func (w *Worktrees) unregistered(list []Worktree) ([]Worktree, error) {
	entries, err := os.ReadDir(w.dir)
	if errors.Is(err, os.ErrNotExist) {
		return list, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", w.dir, err)
	}
	known := map[string]bool{}
	for _, wt := range list {
		known[wt.Path] = true
	}
	for _, e := range entries {
		path := filepath.Join(w.dir, e.Name())
		if strings.HasPrefix(e.Name(), ".") || known[path] {
			continue
		}
		wt := Worktree{Item: e.Name(), Path: path, Unregistered: true, Dirty: []string{e.Name()}}
		if e.IsDir() { // not a link: Lstat's type
			inside, err := os.ReadDir(path)
			if err != nil {
				return nil, fmt.Errorf("list %s: %w", path, err)
			}
			wt.Dirty = nil
			for _, f := range inside {
				// A worktree's .git file only points to its registration;
				// a .git directory is a repository of someone's.
				if f.Name() != ".git" || !f.Type().IsRegular() {
					wt.Dirty = append(wt.Dirty, f.Name())
				}
			}
		}
		list = append(list, wt)
	}
	return list, nil
}

// Remove deletes an item's worktree (its branch stays unless deleteBranch).
func (w *Worktrees) Remove(ctx context.Context, wt Worktree, force, deleteBranch bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	args := []string{"worktree", "remove"}
	if force {
		args = append(args, "--force")
	}
	if _, err := w.repo.Git(ctx, append(args, "--", wt.Path)...); err != nil {
		return err
	}
	if deleteBranch && wt.Branch != "" {
		flag := "-d"
		if force {
			flag = "-D"
		}
		if _, err := w.repo.Git(ctx, "branch", flag, "--", wt.Branch); err != nil {
			return err
		}
	}
	return nil
}
