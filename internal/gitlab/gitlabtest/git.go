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

// isAncestor reports whether commit a is an ancestor of commit b (or b
// itself). Commits never change, so the answer is kept.
func (p *project) isAncestor(a, b string) bool {
	key := [2]string{a, b}
	if yes, ok := p.ancestors[key]; ok {
		return yes
	}
	_, err := runGit(p.gitDir, nil, "", "merge-base", "--is-ancestor", a, b)
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return false // not kept: git failed, it did not answer
	}
	p.ancestors[key] = err == nil
	return err == nil
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

// rebase replays the commits of head that onto lacks on top of onto, one
// by one and merges left out, as GitLab's rebase does, committed by
// committer with each commit's author and message kept; a commit that
// changes nothing any more is dropped. It returns the new head, or
// errConflict when a commit does not apply.
func (p *project) rebase(onto, head, committer string) (string, error) {
	list, err := runGit(p.gitDir, nil, "", "rev-list", "--reverse", "--topo-order", "--no-merges", onto+".."+head)
	if err != nil {
		return "", err
	}
	at := onto
	for _, commit := range strings.Fields(list) {
		if at, err = p.pick(commit, at, committer); err != nil {
			return "", err
		}
	}
	return at, nil
}

// pick applies commit's change on top of onto, as a cherry-pick does, and
// returns the commit made (onto itself when the change is there already).
// A bare repository has no index to cherry-pick in: a stand-in commit of
// onto's tree whose parent is commit's makes commit's parent the merge
// base that git merge-tree merges from.
func (p *project) pick(commit, onto, committer string) (string, error) {
	parent, err := runGit(p.gitDir, nil, "", "rev-parse", "--verify", "--quiet", commit+"^")
	if err != nil {
		return "", fmt.Errorf("rebase %s: a root commit: %w", commit, errConflict)
	}
	ontoTree, err := runGit(p.gitDir, nil, "", "rev-parse", onto+"^{tree}")
	if err != nil {
		return "", err
	}
	standIn, err := p.commitTree(ontoTree, []string{parent}, "stand-in for "+onto, committer)
	if err != nil {
		return "", err
	}
	tree, err := p.mergeTree(standIn, commit)
	if err != nil {
		return "", err
	}
	if tree == ontoTree {
		return onto, nil
	}
	info, err := runGit(p.gitDir, nil, "", "log", "-1", "--format=%an%n%ae%n%ad", "--date=raw", commit)
	if err != nil {
		return "", err
	}
	who := strings.SplitN(info, "\n", 3)
	if len(who) != 3 {
		return "", fmt.Errorf("rebase %s: cannot read its author from %q", commit, info)
	}
	msg, err := runGit(p.gitDir, nil, "", "log", "-1", "--format=%B", commit)
	if err != nil {
		return "", err
	}
	env := []string{
		"GIT_AUTHOR_NAME=" + who[0], "GIT_AUTHOR_EMAIL=" + who[1], "GIT_AUTHOR_DATE=" + who[2],
		"GIT_COMMITTER_NAME=" + committer, "GIT_COMMITTER_EMAIL=" + committer + "@example.com",
	}
	return runGit(p.gitDir, env, msg, "commit-tree", tree, "-p", onto, "-F", "-")
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
