package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// SaveChanges puts the tree's uncommitted changes (untracked files
// included) aside in the repository's stash under message, leaving the
// tree clean; git stash list shows them, git stash apply brings them back.
func (r *Repo) SaveChanges(ctx context.Context, message string) error {
	_, err := r.Git(ctx, append(append([]string(nil), r.committer()...), "stash", "push", "--include-untracked", "--quiet", "-m", message)...)
	return err
}
