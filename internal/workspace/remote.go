package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// An item's branch travels between machines through a remote: each
// machine fetches it (with the base) into its repository's remote-tracking
// refs, works on it in a worktree, and pushes it back under a lease on the
// head it last saw, so two machines never overwrite each other's commits.

// ErrRemoteMoved is wrapped when a push is refused because the remote's
// branch is no longer at the head the push expected: another machine
// pushed to it since.
var ErrRemoteMoved = errors.New("the remote's branch moved on")

// ErrNotFastForward is wrapped when a tree's branch cannot be brought to a
// commit without leaving one of its own commits behind.
var ErrNotFastForward = errors.New("not a fast-forward")

// viaRemote runs the git command args(url) makes against remote (a
// remote's name, a URL or a path). A non-empty authHeader goes with the
// requests to an http(s) remote through cadre's proxy (see pushProxy),
// never to git; the URL is then the remote's push URL, read once, since a
// branch is fetched from and pushed to the same place.
func (r *Repo) viaRemote(ctx context.Context, remote, authHeader string, args func(url string) []string) error {
	if authHeader != "" {
		u := remote // a URL given as the remote
		if !strings.Contains(remote, "://") {
			if out, err := r.Git(ctx, "remote", "get-url", "--push", remote); err == nil {
				u = out
			}
		}
		if u = strings.TrimSpace(u); strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
			return r.throughProxy(ctx, u, authHeader, args)
		}
	}
	_, err := r.Git(ctx, args(remote)...)
	return err
}

// TrackingRef is where FetchBranches keeps the remote's branch.
func TrackingRef(track, branch string) string { return "refs/remotes/" + track + "/" + branch }

// FetchBranches fetches branches from remote into refs/remotes/<track>/
// (TrackingRef) and returns the head of each; a branch the remote does not
// have is no error, its head is "". One git process when the remote has
// every branch (git refuses a fetch naming a missing one: it is asked
// again without it).
func (r *Repo) FetchBranches(ctx context.Context, remote, authHeader, track string, branches ...string) (map[string]string, error) {
	for _, b := range append([]string{track}, branches...) {
		if b == "" || strings.HasPrefix(b, "-") {
			return nil, fmt.Errorf("fetch: %q is not a branch or remote name", b)
		}
	}
	heads := map[string]string{}
	want := append([]string(nil), branches...)
	for len(want) > 0 {
		err := r.viaRemote(ctx, remote, authHeader, func(url string) []string {
			args := []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", url}
			for _, b := range want {
				args = append(args, "+refs/heads/"+b+":"+TrackingRef(track, b))
			}
			return args
		})
		if err == nil {
			break
		}
		missing := ""
		if _, rest, ok := strings.Cut(err.Error(), "couldn't find remote ref refs/heads/"); ok {
			missing = strings.TrimSpace(rest)
		}
		i := indexOf(want, missing)
		if i < 0 {
			return nil, fmt.Errorf("fetch from %s: %w", remote, err)
		}
		want = append(want[:i], want[i+1:]...)
		heads[missing] = ""
	}
	for _, b := range want {
		sha, err := r.RefCommit(ctx, TrackingRef(track, b))
		if err != nil {
			return nil, fmt.Errorf("fetch from %s: %w", remote, err)
		}
		heads[b] = sha
	}
	return heads, nil
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

// RefCommit is the commit ref (a full ref name) names: read from its
// loose file, where git writes a ref it just moved, else asked of git.
func (r *Repo) RefCommit(ctx context.Context, ref string) (string, error) {
	if common, _, err := r.gitDirs(ctx); err == nil && strings.HasPrefix(ref, "refs/") && !strings.Contains(ref, "..") {
		if data, err := os.ReadFile(filepath.Join(common, filepath.FromSlash(ref))); err == nil {
			if id := strings.TrimSpace(string(data)); isObjectID(id) {
				return id, nil
			}
		}
	}
	out, err := r.Git(ctx, "rev-parse", "--verify", "-q", ref+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("no commit %s: %w", ref, err)
	}
	return strings.TrimSpace(out), nil
}

// PushLease pushes branch to remote only while the remote's branch is at
// expect ("": while the remote has no such branch), git's
// --force-with-lease; a refusal because it is not wraps ErrRemoteMoved.
// authHeader is as for Push: it never reaches git.
func (r *Repo) PushLease(ctx context.Context, remote, branch, authHeader, expect string) error {
	ref := "refs/heads/" + branch
	err := r.viaRemote(ctx, remote, authHeader, func(url string) []string {
		return []string{"push", "--quiet", "--force-with-lease=" + ref + ":" + expect, "--", url, ref + ":" + ref}
	})
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "stale info") || strings.Contains(msg, "[rejected]") || strings.Contains(msg, "fetch first") {
			return fmt.Errorf("%w: %s", ErrRemoteMoved, msg)
		}
		return err
	}
	return nil
}

// FastForward moves the tree's branch (and files) to commit, which must
// descend from its head (else the error wraps ErrNotFastForward); a
// commit the head already contains leaves it where it is. Uncommitted
// changes git would have to overwrite make it fail.
func (r *Repo) FastForward(ctx context.Context, commit string) error {
	if !isObjectID(commit) {
		return fmt.Errorf("fast-forward: %q is not a commit id", commit)
	}
	if _, err := r.Git(ctx, "merge", "--ff-only", "--quiet", commit); err != nil {
		if strings.Contains(err.Error(), "Not possible to fast-forward") || strings.Contains(err.Error(), "not possible to fast-forward") {
			return fmt.Errorf("%w: %w", ErrNotFastForward, err)
		}
		return err
	}
	return nil
}

// Unstack moves the tree's branch back from its head, a commit the
// remote's branch does not have, to commit, which must be the remote's and
// contain the head's parent: the head was made again on top of what it
// duplicates, which the remote has. Uncommitted changes are kept (git
// reset --keep); one git would have to overwrite makes it fail.
func (r *Repo) Unstack(ctx context.Context, commit string) error {
	if !isObjectID(commit) {
		return fmt.Errorf("unstack: %q is not a commit id", commit)
	}
	out, err := r.Git(ctx, "rev-list", commit+"..HEAD", "--")
	if err != nil {
		return fmt.Errorf("unstack: %w", err)
	}
	if n := len(strings.Fields(out)); n != 1 {
		return fmt.Errorf("unstack: the head is %d commits ahead of %.12s, not one", n, commit)
	}
	if _, err := r.Git(ctx, "reset", "--keep", "--quiet", commit); err != nil {
		return fmt.Errorf("unstack: %w", err)
	}
	return nil
}

// SaveChanges puts the tree's uncommitted changes (untracked files
// included) aside in the repository's stash under message, leaving the
// tree clean; git stash list shows them, git stash apply brings them back.
func (r *Repo) SaveChanges(ctx context.Context, message string) error {
	_, err := r.Git(ctx, append(append([]string(nil), r.committer()...), "stash", "push", "--include-untracked", "--quiet", "-m", message)...)
	return err
}

// A tree's uncommitted changes travel between machines as a
// work-in-progress commit: made off the branch from a copy of the tree's
// index (the tree's own index and branch are never touched), its parent the
// branch head, pushed to a scratch ref of the remote and fetched by its id,
// which the journal records with the step that left the changes.

// WIP is a commit holding a tree's uncommitted changes; the zero WIP is a
// clean tree.
type WIP struct {
	Commit string `json:"commit,omitempty"`
	Base   string `json:"base,omitempty"` // its parent: the head it was taken on
	Tree   string `json:"tree,omitempty"`
}

// WIPRef is the remote's scratch ref for branch's latest WIP commit.
func WIPRef(branch string) string { return "refs/cadre/wip/" + branch }

// wipSpec is every path of a tree but cadre's state directory; ignored
// files are never added.
var wipSpec = []string{"--", ".", ":(top,exclude)" + StateDir}

// TakeWIP commits the tree's uncommitted changes (tracked and untracked,
// deletions included) off its branch with message, and returns the commit;
// a clean tree gives the zero WIP after one git process (status), a dirty
// one takes four (status, add, write-tree, commit-tree).
func (r *Repo) TakeWIP(ctx context.Context, message string, mask func([]byte) []byte) (WIP, error) {
	dirty, err := r.Dirty(ctx)
	if err != nil {
		return WIP{}, err
	}
	if !hasChanges(dirty) {
		return WIP{}, nil
	}
	base, err := r.Head(ctx)
	if err != nil {
		return WIP{}, err
	}
	tree, err := r.TreeOfChanges(ctx)
	if err != nil {
		return WIP{}, err
	}
	if mask != nil {
		// As a commit's: the files the WIP changes, masked in the tree
		// before they leave the machine.
		if tree, err = r.maskWIP(ctx, base, tree, mask); err != nil {
			return WIP{}, err
		}
	}
	args := append(append([]string(nil), r.committer()...), "commit-tree", "-p", base, "-m", message, tree)
	out, err := r.Git(ctx, args...)
	if err != nil {
		return WIP{}, err
	}
	return WIP{Commit: strings.TrimSpace(out), Base: base, Tree: tree}, nil
}

// maskWIP masks the files tree changes against base in the working tree
// and returns the tree they make then (tree itself when none changed).
func (r *Repo) maskWIP(ctx context.Context, base, tree string, mask func([]byte) []byte) (string, error) {
	out, err := r.Git(ctx, "diff-tree", "-r", "-z", "--no-renames", "--name-only", "--diff-filter=AM", base, tree)
	if err != nil {
		return "", fmt.Errorf("mask uncommitted changes: %w", err)
	}
	paths := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	changed, err := r.maskInPlace(slices.DeleteFunc(paths, func(p string) bool { return p == "" }), nil, mask)
	if err != nil || len(changed) == 0 {
		return tree, err
	}
	return r.TreeOfChanges(ctx)
}

// hasChanges says whether status paths name anything outside .cadre/.
func hasChanges(paths []string) bool {
	for _, p := range paths {
		if p != StateDir && !strings.HasPrefix(p, StateDir+"/") {
			return true
		}
	}
	return false
}

// TreeOfChanges writes the tree the working tree's files make (but
// .cadre/ and ignored files) and returns its id: git add -A into a copy
// of the tree's index, whose file stats spare hashing what did not change,
// then write-tree.
func (r *Repo) TreeOfChanges(ctx context.Context) (string, error) {
	staged, err := r.stageTree(ctx)
	if err != nil {
		return "", err
	}
	defer os.Remove(staged)
	return r.writeTree(ctx, staged)
}

// stageTree stages the working tree's files (but .cadre/ and ignored
// files) in a copy of the tree's index, kept in its git directory, and
// returns the copy's path, the caller's to remove. The index names the
// tree fully: the files' contents are in the object store.
func (r *Repo) stageTree(ctx context.Context) (staged string, err error) {
	_, gitDir, err := r.gitDirs(ctx)
	if err != nil {
		return "", err
	}
	index := filepath.Join(gitDir, "index")
	staged, err = linkIndex(gitDir, index)
	if err != nil {
		return "", fmt.Errorf("snapshot the tree: %w", err)
	}
	defer func() {
		if err != nil {
			os.Remove(staged)
		}
	}()
	env := []string{"GIT_INDEX_FILE=" + staged}
	if _, err := gitEnv(ctx, r.Dir, env, r.withFilters(ctx, []string{"add", "-A", "--", "."})...); err != nil {
		return "", err
	}
	if _, err := os.Lstat(filepath.Join(r.Dir, StateDir)); err == nil {
		// A tree run in place holds cadre's state, ignored: git add
		// refuses an exclude pathspec naming an ignored path, so what it
		// took of .cadre/ (tracked files only) goes back to the head's.
		if _, err := gitEnv(ctx, r.Dir, env, "reset", "-q", "--", StateDir); err != nil {
			return "", err
		}
	}
	return staged, nil
}

// linkIndex makes a new name in gitDir for the index: git replaces an
// index whole (a lock file renamed over it), never rewrites it in place,
// so a second link is a copy that shares the index's stat, its time
// included, which git's check for racily clean entries reads. A copy is
// made where links cannot be, or when there is no index yet.
func linkIndex(gitDir, index string) (string, error) {
	for range 8 {
		name := filepath.Join(gitDir, snapPrefix+strconv.FormatUint(rand.Uint64(), 36))
		err := os.Link(index, name)
		if err == nil {
			return name, nil
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return copyIndex(gitDir, index)
	}
	return copyIndex(gitDir, index)
}

// copyIndex is linkIndex by copying, keeping the index's time.
func copyIndex(gitDir, index string) (name string, err error) {
	tmp, err := os.CreateTemp(gitDir, snapPrefix)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	if data, err := os.ReadFile(index); err == nil {
		if _, err := tmp.Write(data); err != nil {
			tmp.Close()
			return "", err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if fi, err := os.Stat(index); err == nil {
		if err := os.Chtimes(tmp.Name(), fi.ModTime(), fi.ModTime()); err != nil {
			return "", err
		}
	}
	return tmp.Name(), nil
}

// writeTree writes the tree the index at staged holds and returns its id.
func (r *Repo) writeTree(ctx context.Context, staged string) (string, error) {
	out, err := gitEnv(ctx, r.Dir, []string{"GIT_INDEX_FILE=" + staged}, r.withFilters(ctx, []string{"write-tree"})...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// PushWIP points remote's WIPRef(branch) at commit, whatever it held (it
// is scratch: the journal says which commit belongs to which step).
// authHeader is as for Push.
func (r *Repo) PushWIP(ctx context.Context, remote, branch, authHeader, commit string) error {
	if !isObjectID(commit) {
		return fmt.Errorf("push work in progress: %q is not a commit id", commit)
	}
	return r.viaRemote(ctx, remote, authHeader, func(url string) []string {
		return []string{"push", "--quiet", "--", url, "+" + commit + ":" + WIPRef(branch)}
	})
}

// DeleteWIP deletes remote's WIPRef(branch); one that is not there is no
// error. authHeader is as for Push.
func (r *Repo) DeleteWIP(ctx context.Context, remote, branch, authHeader string) error {
	if branch == "" || strings.HasPrefix(branch, "-") {
		return fmt.Errorf("delete work in progress: %q is not a branch", branch)
	}
	err := r.viaRemote(ctx, remote, authHeader, func(url string) []string {
		return []string{"push", "--quiet", "--", url, ":" + WIPRef(branch)}
	})
	if err != nil && strings.Contains(err.Error(), "unable to delete") && strings.Contains(err.Error(), "remote ref does not exist") {
		return nil
	}
	return err
}

// FetchCommit brings commit from remote by its id, unless this repository
// has it as a loose object already (where git writes the commits it makes).
// A remote's WIPRef may have moved past it: the id is asked for itself.
func (r *Repo) FetchCommit(ctx context.Context, remote, authHeader, commit string) error {
	if !isObjectID(commit) {
		return fmt.Errorf("fetch: %q is not a commit id", commit)
	}
	if common, _, err := r.gitDirs(ctx); err == nil {
		if _, err := os.Stat(filepath.Join(common, "objects", commit[:2], commit[2:])); err == nil {
			return nil
		}
	}
	return r.viaRemote(ctx, remote, authHeader, func(url string) []string {
		return []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", url, commit}
	})
}

// RestoreWIP makes the tree's files those of commit (a WIP commit on the
// tree's head), leaving the index alone, so that they show as the
// uncommitted changes they were: modified, added (untracked) and deleted
// files. One git process; the tree should be clean.
func (r *Repo) RestoreWIP(ctx context.Context, commit string) error {
	if !isObjectID(commit) {
		return fmt.Errorf("restore: %q is not a commit id", commit)
	}
	_, err := r.Git(ctx, append([]string{"restore", "--source=" + commit, "--worktree"}, wipSpec...)...)
	return err
}

// RestoreWIPAfter restores, as uncommitted changes, what w changed that
// the commits since its parent did not: w was taken on an older head, and
// a commit after it (a plan task's, which leaves other tasks' files out)
// took only some of its changes, so the rest are in w alone. For each
// path w changed that the commits did not, the tree's file becomes w's
// (modified, added or deleted); a path the commits changed keeps the
// head's version. It returns the paths restored, and the paths the
// commits changed to something else than w has: w's change to those is
// not in the tree. Two git processes (diff, diff) when the commits took
// all of w, one more (restore) to restore the rest, and one more (diff)
// to compare paths both changed; the tree should be clean.
func (r *Repo) RestoreWIPAfter(ctx context.Context, w WIP) (restored, clashed []string, err error) {
	if !isObjectID(w.Commit) || !isObjectID(w.Base) {
		return nil, nil, fmt.Errorf("restore: %q on %q is not a commit on a commit", w.Commit, w.Base)
	}
	diff := func(from, to string, paths ...string) ([]string, error) {
		args := []string{"diff", "--name-only", "-z", "--no-renames", from, to}
		if len(paths) == 0 {
			args = append(args, wipSpec...)
		} else {
			args = append(args, "--")
			for _, p := range paths {
				args = append(args, ":(top,literal)"+p)
			}
		}
		out, err := r.Git(ctx, args...)
		if err != nil {
			return nil, fmt.Errorf("restore %.12s: %w", w.Commit, err)
		}
		var list []string
		for _, p := range strings.Split(out, "\x00") {
			if p != "" {
				list = append(list, p)
			}
		}
		return list, nil
	}
	mine, err := diff(w.Base, w.Commit)
	if err != nil {
		return nil, nil, err
	}
	since, err := diff(w.Base, "HEAD")
	if err != nil {
		return nil, nil, err
	}
	took := map[string]bool{}
	for _, p := range since {
		took[p] = true
	}
	var both []string
	for _, p := range mine {
		if took[p] {
			both = append(both, p)
		} else {
			restored = append(restored, p)
		}
	}
	if len(restored) > 0 {
		args := []string{"restore", "--source=" + w.Commit, "--worktree", "--"}
		for _, p := range restored {
			args = append(args, ":(top,literal)"+p)
		}
		if _, err := r.Git(ctx, args...); err != nil {
			return nil, nil, fmt.Errorf("restore %.12s: %w", w.Commit, err)
		}
	}
	if len(both) > 0 {
		if clashed, err = diff("HEAD", w.Commit, both...); err != nil {
			return restored, nil, err
		}
	}
	return restored, clashed, nil
}

// DiscardChanges drops the tree's uncommitted changes, untracked files
// included (ignored ones and .cadre/ kept): for changes recorded elsewhere.
func (r *Repo) DiscardChanges(ctx context.Context) error {
	if _, err := r.Git(ctx, "reset", "--hard", "--quiet"); err != nil {
		return err
	}
	_, err := r.Git(ctx, append([]string{"clean", "-d", "--force", "--quiet"}, wipSpec...)...)
	return err
}
