// Package workspace is cadre's only door to git: repository checks, dirty
// trees, commits with step trailers. It shells out to the git binary with
// argv lists (never a shell string), repository hooks disabled and the
// caller's GIT_* variables scrubbed, so an item's text can never become a
// git option and a hook can never run on cadre's behalf.
package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cadre-dev/cadre/internal/runlock"
)

// StateDir is cadre's directory at the repository root; it never reaches a commit.
const StateDir = ".cadre"

// Trailer keys mark a commit with the run and step that made it, so a crash
// between committing and journaling is detected instead of committing
// twice. The run is part of the mark: a later run of the same task makes a
// new commit with the same step id.
const (
	TrailerKey    = "Cadre-Step"
	RunTrailerKey = "Cadre-Run"
)

// Mark identifies the effect a commit belongs to.
type Mark struct {
	Step string
	Run  string
}

// Repo is a git working tree.
type Repo struct {
	Dir string // top level of the working tree

	// untrusted: the tree's content may come from a stranger, so no
	// filter driver its attributes name runs on cadre's behalf.
	untrusted bool

	idOnce   sync.Once
	identity []string // -c options naming a committer when git has none

	cacheMu sync.Mutex
	cache   *gitCache // shared by the handles on the same tree
}

// child is another working tree of the same repository (a worktree); it
// shares the repository's configuration, so the identity check carries over.
func (r *Repo) child(dir string) *Repo {
	c := &Repo{Dir: dir, untrusted: r.untrusted}
	c.idOnce.Do(func() { c.identity = r.committer() })
	return c
}

// committer returns the -c options that give commits an author when the
// repository and user configuration name none.
func (r *Repo) committer() []string {
	r.idOnce.Do(func() {
		if strings.TrimSpace(r.userEmail(context.Background())) == "" {
			r.identity = []string{"-c", "user.name=cadre", "-c", "user.email=cadre@localhost"}
		}
	})
	return r.identity
}

// ErrNotRepo is wrapped when a directory is not inside a git working tree.
var ErrNotRepo = errors.New("not a git repository")

// Open finds the working tree that contains dir.
func Open(ctx context.Context, dir string) (*Repo, error) {
	out, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("%s: %w (run cadre inside a git checkout, or git init first)", dir, ErrNotRepo)
	}
	return &Repo{Dir: strings.TrimSpace(out)}, nil
}

// RunLock is the file of the run lock (internal/runlock) of the
// repository r belongs to. It lies in the repository's common git
// directory, which its linked worktrees share with the main one: a run
// started from any of them holds the one repository.
func (r *Repo) RunLock(ctx context.Context) (string, error) {
	common, _, err := r.gitDirs(ctx)
	if err != nil {
		return "", fmt.Errorf("find the git directory of %s: %w", r.Dir, err)
	}
	return runlock.File(common), nil
}

// Git runs git with args in the working tree and returns its stdout.
func (r *Repo) Git(ctx context.Context, args ...string) (string, error) {
	return git(ctx, r.Dir, r.withFilters(ctx, args)...)
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitEnv(ctx, dir, nil, args...)
}

// gitEnv is git with extra environment (after the scrub), for settings that
// must not appear in argv, where any local user could read them.
func gitEnv(ctx context.Context, dir string, extra []string, args ...string) (string, error) {
	return gitRun(ctx, dir, extra, nil, args...)
}

// gitRun is gitEnv telling started, when set, git's pid once it runs.
func gitRun(ctx context.Context, dir string, extra []string, started func(pid int), args ...string) (string, error) {
	full := append(append([]string(nil), safeArgs...), args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = gitEnviron(os.Environ(), extra)
	var stdout, stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err == nil {
		if started != nil {
			started(cmd.Process.Pid)
		}
		// git's output ends as it exits: read through the runtime's
		// poller, it leaves Wait a zombie to reap at once, where waiting
		// first would hold a thread in waitid (see package exitwait).
		_, rerr := stdout.ReadFrom(out)
		if err = cmd.Wait(); err == nil && rerr != nil {
			err = fmt.Errorf("read its output: %w", rerr) // a short read is no answer
		}
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		// A push's first line names where it went ("To URL"): the
		// reason (a rejected ref) is on the next.
		if first, rest, ok := strings.Cut(msg, "\n"); ok && strings.HasPrefix(first, "To ") {
			msg = strings.TrimSpace(rest)
		}
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return stdout.String(), fmt.Errorf("git %s: %w: %s", subcommand(args), err, msg)
	}
	return stdout.String(), nil
}

// subcommand names the git command of args, after any -c options.
func subcommand(args []string) string {
	for len(args) > 1 && args[0] == "-c" {
		args = args[2:]
	}
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// ExcludeState makes sure .cadre/ is ignored by this repository through
// info/exclude, so state never shows as a change and is never staged.
func (r *Repo) ExcludeState(ctx context.Context) error {
	// info/exclude is the repository's, in its common directory, for
	// every worktree (git rev-parse --git-path info/exclude).
	common, _, err := r.gitDirs(ctx)
	if err != nil {
		return err
	}
	path := filepath.Join(common, "info", "exclude")
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	line := "/" + StateDir + "/"
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) == line {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	data = append(data, line+"\n"...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// Dirty lists the paths with uncommitted changes (untracked files included).
func (r *Repo) Dirty(ctx context.Context) ([]string, error) {
	return r.status(ctx, false)
}

// FindStepCommit returns the commit reachable from HEAD whose trailers are
// mark's run and step, or "" when there is none.
func (r *Repo) FindStepCommit(ctx context.Context, mark Mark) (string, error) {
	return r.findStepCommit(ctx, "HEAD", mark)
}

// FindStepCommitIn is FindStepCommit among the commits reachable from
// commit that from, when not "", does not reach: the commits a remote's
// branch gained since this repository last saw it at from.
func (r *Repo) FindStepCommitIn(ctx context.Context, from, commit string, mark Mark) (string, error) {
	if !isObjectID(commit) || from != "" && !isObjectID(from) {
		return "", fmt.Errorf("find step %s: %q..%q is not a range of commit ids", mark.Step, from, commit)
	}
	if from != "" {
		commit = from + ".." + commit
	}
	return r.findStepCommit(ctx, commit, mark)
}

func (r *Repo) findStepCommit(ctx context.Context, rev string, mark Mark) (string, error) {
	out, err := r.Git(ctx, "log", "--fixed-strings", "--grep", TrailerKey+": "+mark.Step,
		"--format=%H%x00%(trailers:key="+TrailerKey+",valueonly,separator=%x02)%x00%(trailers:key="+RunTrailerKey+",valueonly,separator=%x02)%x01", rev, "--")
	if err != nil {
		if _, herr := r.Git(ctx, "rev-parse", "--verify", "-q", "HEAD"); herr != nil {
			return "", nil // no commits yet
		}
		return "", err
	}
	has := func(list, want string) bool {
		for _, v := range strings.Split(list, "\x02") {
			if strings.TrimSpace(v) == want {
				return true
			}
		}
		return false
	}
	for _, rec := range strings.Split(out, "\x01") {
		parts := strings.Split(strings.TrimSpace(rec), "\x00")
		if len(parts) == 3 && has(parts[1], mark.Step) && has(parts[2], mark.Run) {
			return parts[0], nil
		}
	}
	return "", nil
}

// ErrStateStaged is returned when cadre's state directory would be committed.
var ErrStateStaged = errors.New("refusing to commit cadre state")

// Push pushes branch to remote. A non-empty authHeader ("Authorization:
// ...") never reaches git, for an http(s) remote: git pushes through a
// proxy of cadre's that adds it (see pushProxy), so the credential shows
// in no process list, environment, config file or error message. Other
// remotes (a path, ssh) take no header.
func (r *Repo) Push(ctx context.Context, remote, branch, authHeader string) error {
	refspec := "refs/heads/" + branch + ":refs/heads/" + branch
	if authHeader != "" {
		u, err := r.Git(ctx, "remote", "get-url", "--push", remote)
		if err != nil {
			u = remote // a URL given as the remote
		}
		if u = strings.TrimSpace(u); strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
			return r.pushThroughProxy(ctx, u, authHeader, refspec)
		}
	}
	_, err := git(ctx, r.Dir, r.withFilters(ctx, []string{"push", "--quiet", "--", remote, refspec})...)
	return err
}

// Init creates a new repository in dir on branch.
func Init(ctx context.Context, dir, branch string) (*Repo, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	if _, err := git(ctx, dir, "init", "--quiet", "--initial-branch", branch); err != nil {
		return nil, err
	}
	return Open(ctx, dir)
}

// Changed lists every path the uncommitted changes touch, both sides of a
// rename or copy included (a rename away from a path changes it too).
func (r *Repo) Changed(ctx context.Context) ([]string, error) {
	return r.status(ctx, true)
}

// status lists the paths of git status, with the sources of renames and
// copies when sources is set.
func (r *Repo) status(ctx context.Context, sources bool) ([]string, error) {
	out, err := r.Git(ctx, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	var paths []string
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		paths = append(paths, f[3:])
		if (f[0] == 'R' || f[0] == 'C') && i+1 < len(fields) {
			i++ // the rename's source follows
			if sources {
				paths = append(paths, fields[i])
			}
		}
	}
	return paths, nil
}

// Merge merges commit rev into the tree's branch as a merge commit with
// message and mark's trailers. Textual conflicts leave the merge in
// progress (a later Commit concludes it) and are returned, the
// conflicted files by path; any other failure is an error.
func (r *Repo) Merge(ctx context.Context, rev, message string, mark Mark) ([]string, error) {
	if !isObjectID(rev) {
		return nil, fmt.Errorf("merge: %q is not a commit id", rev)
	}
	args := append(append([]string(nil), r.committer()...), "merge", "--no-ff", "--no-edit", "-m", message)
	if mark.Step != "" {
		args = append(args, "-m", TrailerKey+": "+mark.Step+"\n"+RunTrailerKey+": "+mark.Run)
	}
	_, err := r.Git(ctx, append(args, rev)...)
	if err == nil {
		return nil, nil
	}
	files, uerr := r.Conflicted(ctx)
	if uerr != nil || len(files) == 0 {
		return nil, fmt.Errorf("merge %.12s: %w", rev, err)
	}
	return files, nil
}

// Conflicted lists the files a merge in progress left conflicted.
func (r *Repo) Conflicted(ctx context.Context) ([]string, error) {
	out, err := r.Git(ctx, "diff", "--name-only", "-z", "--diff-filter=U")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// Merging reports whether a merge is in progress in the tree.
func (r *Repo) Merging(ctx context.Context) bool {
	_, err := r.Git(ctx, "rev-parse", "-q", "--verify", "MERGE_HEAD")
	return err == nil
}

// MergesCleanly reports whether commits a and b merge without a textual
// conflict, merged in memory (git merge-tree): nothing is checked out or
// written but objects.
func (r *Repo) MergesCleanly(ctx context.Context, a, b string) (bool, error) {
	if !isObjectID(a) || !isObjectID(b) {
		return false, fmt.Errorf("merge-tree: %q or %q is not a commit id", a, b)
	}
	_, err := r.Git(ctx, "merge-tree", "--write-tree", "--no-messages", a, b)
	if err == nil {
		return true, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return false, nil
	}
	return false, fmt.Errorf("merge-tree: %w", err)
}

// LogCommit is a commit as a log shows it.
type LogCommit struct {
	SHA     string `json:"sha"`
	Subject string `json:"subject"`
}

// BranchChanges is what branch changed since it left base: its diff
// (cut at max bytes, saying so) and its commits, newest first. No
// external diff or text conversion runs: the branch's attributes may be a
// stranger's.
func (r *Repo) BranchChanges(ctx context.Context, base, branch string, max int) (string, []LogCommit, error) {
	for _, ref := range []string{base, branch} {
		if ref == "" || strings.HasPrefix(ref, "-") {
			return "", nil, fmt.Errorf("changes: %q is not a branch", ref)
		}
	}
	u := r.Untrusted()
	log, err := u.Git(ctx, "log", "--no-color", "--format=%H%x00%s", base+".."+branch, "--")
	if err != nil {
		return "", nil, err
	}
	var commits []LogCommit
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if sha, subject, ok := strings.Cut(line, "\x00"); ok {
			commits = append(commits, LogCommit{SHA: sha, Subject: subject})
		}
	}
	diff, err := u.Git(ctx, "diff", "--no-color", "--no-ext-diff", "--no-textconv", base+"..."+branch, "--")
	if err != nil {
		return "", nil, err
	}
	if len(diff) > max {
		diff = diff[:max] + fmt.Sprintf("\n… (the diff goes on: %d bytes in all)\n", len(diff))
	}
	return diff, commits, nil
}
