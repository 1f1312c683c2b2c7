package gitlabtest

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// runGit runs git on the bare repository dir, cut off from the caller's
// configuration and GIT_* variables (a test may run inside a hook), with
// env added, and returns its output trimmed.
func runGit(dir string, env []string, stdin string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"--git-dir=" + dir}, args...)...)
	base := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GIT_") })
	cmd.Env = append(base, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(out.String()), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// branches reads every branch of the repository at dir and its commit.
func branches(dir string) map[string]string {
	refs := map[string]string{}
	out, err := runGit(dir, nil, "", "for-each-ref", "--format=%(objectname) %(refname:lstrip=2)", "refs/heads/")
	if err != nil {
		return refs
	}
	for line := range strings.SplitSeq(out, "\n") {
		if sha, name, ok := strings.Cut(line, " "); ok {
			refs[name] = sha
		}
	}
	return refs
}

// rev returns the commit branch points at; false without a git directory
// or such a branch. The branches are read once per request: git may change
// between requests, never during one.
func (p *project) rev(branch string) (string, bool) {
	if p.gitDir == "" || branch == "" {
		return "", false
	}
	if p.refs == nil {
		p.refs = branches(p.gitDir)
	}
	sha, ok := p.refs[branch]
	return sha, ok
}

// errConflict is a merge that does not apply cleanly.
var errConflict = errors.New("merge conflict")

// mergeTree merges head into base without touching a ref and returns the
// merged tree, or errConflict. Commits never change, so the answer is kept.
func (p *project) mergeTree(base, head string) (string, error) {
	key := [2]string{base, head}
	if tree, ok := p.merges[key]; ok {
		if tree == "" {
			return "", errConflict
		}
		return tree, nil
	}
	out, err := runGit(p.gitDir, nil, "", "merge-tree", "--write-tree", "--no-messages", base, head)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		p.merges[key] = "" // exit 1 is git's "conflicts"
		return "", errConflict
	}
	if err != nil {
		return "", err
	}
	tree, _, _ := strings.Cut(out, "\n")
	p.merges[key] = tree
	return tree, nil
}

// mergeBase is the best common ancestor of a and b, "" when none.
func (p *project) mergeBase(a, b string) string {
	out, err := runGit(p.gitDir, nil, "", "merge-base", a, b)
	if err != nil {
		return ""
	}
	return out
}

// commitTree makes a commit of tree with parents, authored by the token's
// user as GitLab authors its merge commits.
func (p *project) commitTree(tree string, parents []string, msg, author string) (string, error) {
	args := []string{"commit-tree", tree, "-F", "-"}
	for _, parent := range parents {
		args = append(args, "-p", parent)
	}
	env := []string{
		"GIT_AUTHOR_NAME=" + author, "GIT_AUTHOR_EMAIL=" + author + "@example.com",
		"GIT_COMMITTER_NAME=" + author, "GIT_COMMITTER_EMAIL=" + author + "@example.com",
	}
	return runGit(p.gitDir, env, msg, args...)
}

// fakeSHA makes a stable commit-like id from parts, for projects without a
// git directory.
func fakeSHA(parts ...string) string {
	sum := sha1.Sum([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])
}

// GitRepo is a bare git repository a test builds branches in, to give to
// SetGitDir.
type GitRepo struct {
	Dir string
	t   testing.TB
}

// NewGitRepo makes a bare repository in a temporary directory, with one
// commit on main holding README.md.
func NewGitRepo(t testing.TB) *GitRepo {
	t.Helper()
	g := &GitRepo{Dir: filepath.Join(t.TempDir(), "widget.git"), t: t}
	if _, err := runGit(g.Dir, nil, "", "init", "--quiet", "--bare", "--initial-branch=main", g.Dir); err != nil {
		t.Fatalf("gitlabtest: %v", err)
	}
	g.Commit("main", "", "Initial commit", map[string]string{"README.md": "widget\n"})
	return g
}

// Commit commits files (path to content; other files are kept) on branch
// with message msg, as a push would, and returns the commit. A branch that
// does not exist yet starts from branch from ("" = the default, main).
func (g *GitRepo) Commit(branch, from, msg string, files map[string]string) string {
	g.t.Helper()
	refs := branches(g.Dir)
	parent, ok := refs[branch]
	if !ok {
		if parent, ok = refs[cmpOr(from, "main")]; !ok && len(refs) > 0 {
			g.t.Fatalf("gitlabtest: Commit: no branch %q to start %q from", from, branch)
		}
	}
	// One fast-import stream writes the blobs, the tree and the commit,
	// where a process per object would cost more than all of them.
	var in strings.Builder
	data := func(s string) { fmt.Fprintf(&in, "data %d\n%s\n", len(s), s) }
	fmt.Fprintf(&in, "commit refs/heads/%s\nmark :1\n", branch)
	fmt.Fprintf(&in, "author Test Author <author@example.com> %d +0000\n", time.Now().Unix())
	fmt.Fprintf(&in, "committer Test Author <author@example.com> %d +0000\n", time.Now().Unix())
	data(msg)
	if parent != "" {
		fmt.Fprintf(&in, "from %s\n", parent)
	}
	paths := make([]string, 0, len(files))
	for path := range files {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	for _, path := range paths {
		fmt.Fprintf(&in, "M 100644 inline %s\n", path)
		data(files[path])
	}
	in.WriteString("done\n")
	if _, err := runGit(g.Dir, nil, in.String(), "fast-import", "--quiet", "--done", "--force"); err != nil {
		g.t.Fatalf("gitlabtest: Commit: %v", err)
	}
	return g.Rev(branch)
}

// Move points branch at commit rev, as a force push does.
func (g *GitRepo) Move(branch, rev string) {
	g.t.Helper()
	if _, err := runGit(g.Dir, nil, "", "update-ref", "refs/heads/"+branch, rev); err != nil {
		g.t.Fatalf("gitlabtest: Move: %v", err)
	}
}

// Rev returns the commit branch points at, "" when there is no such
// branch.
func (g *GitRepo) Rev(branch string) string {
	return branches(g.Dir)[branch]
}

// Read returns the content of path in the tree of rev (a branch or a
// commit), trimmed.
func (g *GitRepo) Read(rev, path string) string {
	g.t.Helper()
	out, err := runGit(g.Dir, nil, "", "cat-file", "blob", rev+":"+path)
	if err != nil {
		g.t.Fatalf("gitlabtest: Read: %v", err)
	}
	return out
}

// Parents returns the parents of commit rev.
func (g *GitRepo) Parents(rev string) []string {
	g.t.Helper()
	out, err := runGit(g.Dir, nil, "", "rev-list", "--parents", "-n", "1", rev)
	if err != nil {
		g.t.Fatalf("gitlabtest: Parents: %v", err)
	}
	return strings.Fields(out)[1:]
}

// Message returns the message of commit rev, trimmed.
func (g *GitRepo) Message(rev string) string {
	g.t.Helper()
	out, err := runGit(g.Dir, nil, "", "log", "-1", "--format=%B", rev)
	if err != nil {
		g.t.Fatalf("gitlabtest: Message: %v", err)
	}
	return out
}
