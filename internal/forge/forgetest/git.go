package forgetest

import (
	"bytes"
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

// git runs git on the bare repository dir with env added, isolated from
// the caller's configuration and GIT_* variables (a test may run inside a
// hook or a worktree), and returns its output trimmed.
func git(dir string, env []string, stdin string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"--git-dir=" + dir}, args...)...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GIT_") }),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		return strings.TrimSpace(out.String()), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// rev returns the commit branch points at in the repository's git
// directory; false when there is none, or no such branch.
func (r *repo) rev(branch string) (string, bool) {
	if r.gitDir == "" || branch == "" {
		return "", false
	}
	refs := r.refs
	if refs == nil {
		refs = loadRefs(r.gitDir)
		if r.serving {
			r.refs = refs // one look per request: git may change between them
		}
	}
	sha, ok := refs[branch]
	return sha, ok
}

// loadRefs reads every branch of the repository at dir and its commit.
func loadRefs(dir string) map[string]string {
	out, err := git(dir, nil, "", "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/")
	refs := map[string]string{}
	if err != nil {
		return refs
	}
	for line := range strings.SplitSeq(out, "\n") {
		if sha, ref, ok := strings.Cut(line, " "); ok {
			refs[strings.TrimPrefix(ref, "refs/heads/")] = sha
		}
	}
	return refs
}

// errConflict is a merge that does not apply cleanly.
var errConflict = errors.New("merge conflict")

// mergeTree merges head into base without touching any ref, and returns
// the merged tree; errConflict when the two conflict. Commits never
// change, so neither does the answer: it is kept.
func (r *repo) mergeTree(base, head string) (string, error) {
	key := [2]string{base, head}
	if tree, ok := r.merges[key]; ok {
		if tree == "" {
			return "", errConflict
		}
		return tree, nil
	}
	out, err := git(r.gitDir, nil, "", "merge-tree", "--write-tree", "--no-messages", base, head)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		r.merges[key] = ""
		return "", errConflict // exit 1 is git's "conflicts", its output the conflicted tree
	}
	if err != nil {
		return "", err
	}
	tree, _, _ := strings.Cut(out, "\n")
	r.merges[key] = tree
	return tree, nil
}

// GitRepo is a bare git repository a test builds branches in, to give to
// SetGitDir.
type GitRepo struct {
	Dir string
	t   testing.TB
}

// NewGitRepo makes an empty bare repository in a temporary directory.
func NewGitRepo(t testing.TB) *GitRepo {
	t.Helper()
	g := &GitRepo{Dir: filepath.Join(t.TempDir(), "repo.git"), t: t}
	if _, err := git(g.Dir, nil, "", "init", "--quiet", "--bare", "--initial-branch=main", g.Dir); err != nil {
		t.Fatalf("forgetest: %v", err)
	}
	return g
}

// Commit commits files (path to content) on branch with message msg and
// returns the commit. A branch that does not exist yet starts from the
// branch from, or as a root commit when from is "".
func (g *GitRepo) Commit(branch, from, msg string, files map[string]string) string {
	g.t.Helper()
	refs := loadRefs(g.Dir)
	parent := refs[branch]
	if parent == "" && from != "" {
		if parent = refs[from]; parent == "" {
			g.t.Fatalf("forgetest: Commit: no branch %q to start %q from", from, branch)
		}
	}
	// One fast-import stream makes the blobs, the tree and the commit: a
	// git process costs more than all of them.
	var b strings.Builder
	data := func(s string) { fmt.Fprintf(&b, "data %d\n%s\n", len(s), s) }
	fmt.Fprintf(&b, "commit refs/heads/%s\nmark :1\ncommitter Test Author <author@example.com> %d +0000\n", branch, time.Now().Unix())
	data(msg)
	if parent != "" {
		fmt.Fprintf(&b, "from %s\n", parent)
	}
	for _, path := range sortedPaths(files) {
		fmt.Fprintf(&b, "M 100644 inline %s\n", path)
		data(files[path])
	}
	b.WriteString("done\n")
	marks := filepath.Join(g.t.TempDir(), "marks")
	if _, err := git(g.Dir, nil, b.String(), "fast-import", "--quiet", "--done", "--export-marks="+marks); err != nil {
		g.t.Fatalf("forgetest: Commit: %v", err)
	}
	out, err := os.ReadFile(marks)
	sha, ok := strings.CutPrefix(strings.TrimSpace(string(out)), ":1 ")
	if err != nil || !ok {
		g.t.Fatalf("forgetest: Commit: no commit made: %q, %v", out, err)
	}
	return sha
}

// Rev returns the commit branch points at, "" when there is no such
// branch.
func (g *GitRepo) Rev(branch string) string {
	return loadRefs(g.Dir)[branch]
}

// Read returns the content of path in the tree of rev (a branch or a
// commit), trimmed of surrounding white space.
func (g *GitRepo) Read(rev, path string) string {
	g.t.Helper()
	out, err := git(g.Dir, nil, "", "cat-file", "blob", rev+":"+path)
	if err != nil {
		g.t.Fatalf("forgetest: Read: %v", err)
	}
	return out
}

// Parents returns the parents of commit rev.
func (g *GitRepo) Parents(rev string) []string {
	g.t.Helper()
	out, err := git(g.Dir, nil, "", "rev-list", "--parents", "-n", "1", rev)
	if err != nil {
		g.t.Fatalf("forgetest: Parents: %v", err)
	}
	return strings.Fields(out)[1:]
}

// Message returns the message of commit rev, trimmed.
func (g *GitRepo) Message(rev string) string {
	g.t.Helper()
	out, err := git(g.Dir, nil, "", "log", "-1", "--format=%B", rev)
	if err != nil {
		g.t.Fatalf("forgetest: Message: %v", err)
	}
	return out
}

func sortedPaths(files map[string]string) []string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	return paths
}
