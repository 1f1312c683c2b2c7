package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// cadre's git sees no GIT_* variable but the commit identity, and no
// secret: only the host variables git needs.
func TestGitEnvironKeepsNoGitVariableButTheIdentity(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/h",
		"GIT_DIR=/elsewhere/.git", "GIT_WORK_TREE=/elsewhere", "GIT_INDEX_FILE=/tmp/i",
		"GIT_CONFIG_PARAMETERS='core.hookspath'='/tmp/evil'", "GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=core.fsmonitor", "GIT_CONFIG_VALUE_0=/tmp/evil", "GIT_CONFIG_GLOBAL=/tmp/evil.cfg",
		"GIT_EXEC_PATH=/tmp/evil", "GIT_SSH_COMMAND=touch /tmp/evil", "GIT_EXTERNAL_DIFF=/tmp/evil",
		"GIT_TERMINAL_PROMPT=1", "GIT_AUTHOR_NAME=A", "GIT_COMMITTER_EMAIL=c@example.com", "GIT_AUTHOR_X=1",
		"GITHUB_TOKEN=ghp_secret", "ANTHROPIC_API_KEY=sk-secret", "LANG=C.UTF-8", "SSH_AUTH_SOCK=/run/agent"}
	got := gitEnviron(environ, []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=x"})
	want := []string{"PATH=/bin", "HOME=/h", "GIT_AUTHOR_NAME=A", "GIT_COMMITTER_EMAIL=c@example.com",
		"LANG=C.UTF-8", "SSH_AUTH_SOCK=/run/agent", "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0=x"}
	if !slices.Equal(got, want) {
		t.Errorf("gitEnviron =\n%q\nwant\n%q", got, want)
	}
}

// Variables in cadre's own environment that would point git at another
// repository or add configuration neither redirect nor configure its git.
func TestGitVariablesNeitherRedirectNorConfigure(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	other := newRepo(t)
	marker := filepath.Join(t.TempDir(), "ran")
	hooks := t.TempDir()
	write(t, filepath.Join(hooks, "pre-commit"), "#!/bin/sh\ntouch "+marker+"\n")
	os.Chmod(filepath.Join(hooks, "pre-commit"), 0o755)
	write(t, filepath.Join(r.Dir, ".gitattributes"), "* filter=evil\n")
	t.Setenv("GIT_DIR", filepath.Join(other.Dir, ".git"))
	t.Setenv("GIT_WORK_TREE", other.Dir)
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.hookspath'='"+hooks+"' 'filter.evil.clean'='touch "+marker+"'")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "filter.evil.clean")
	t.Setenv("GIT_CONFIG_VALUE_0", "touch "+marker)
	write(t, filepath.Join(r.Dir, "f"), "x")
	sha, err := r.CommitAll(ctx, "m", Mark{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a command from cadre's GIT_* environment ran")
	}
	if out, _ := other.Git(ctx, "rev-parse", "--verify", "-q", "HEAD"); strings.TrimSpace(out) != "" {
		t.Errorf("the commit went to GIT_DIR's repository (%s)", out)
	}
	if out, _ := r.Git(ctx, "rev-parse", "HEAD"); strings.TrimSpace(out) != sha {
		t.Errorf("HEAD = %s, want the commit %s", out, sha)
	}
}

func TestFsmonitorDoesNotRun(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	marker := filepath.Join(t.TempDir(), "ran")
	write(t, filepath.Join(r.Dir, "monitor.sh"), "#!/bin/sh\ntouch "+marker+"\n")
	os.Chmod(filepath.Join(r.Dir, "monitor.sh"), 0o755)
	if _, err := r.Git(ctx, "config", "core.fsmonitor", filepath.Join(r.Dir, "monitor.sh")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, "f"), "x")
	if _, err := r.CommitAll(ctx, "m", Mark{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Dirty(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the repository's fsmonitor command ran")
	}
}

// An untrusted tree's filter driver runs neither when cadre stages and
// commits nor when it checks out, and the content is committed as it is.
func TestUntrustedRunsNoFilter(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	marker := filepath.Join(t.TempDir(), "ran")
	for _, k := range []string{"clean", "smudge"} {
		if _, err := r.Git(ctx, "config", "filter.x."+k, "touch "+marker+"; cat"); err != nil {
			t.Fatal(err)
		}
	}
	r.Git(ctx, "config", "filter.x.required", "true")
	write(t, filepath.Join(r.Dir, ".gitattributes"), "* filter=x\n")
	write(t, filepath.Join(r.Dir, "f"), "content\n")
	if err := r.ExcludeState(ctx); err != nil {
		t.Fatal(err)
	}
	u := r.Untrusted()
	if _, err := u.CommitAll(ctx, "m", Mark{}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewWorktrees(r).Ensure(ctx, "a", "cadre/a", "main", EnsureOptions{Untrusted: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a filter driver ran for an untrusted tree")
	}
	if out, _ := u.Git(ctx, "show", "HEAD:f"); out != "content\n" {
		t.Errorf("committed f = %q", out)
	}
	// The same tree, trusted, runs it: the test would see a filter run.
	write(t, filepath.Join(r.Dir, "g"), "more\n")
	if _, err := r.CommitAll(ctx, "m2", Mark{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the trusted commit ran no filter: the check above proves nothing")
	}
}

func TestFilterOff(t *testing.T) {
	got := filterOff("filter.lfs.clean\nfilter.lfs.smudge\nfilter.a.b.process\n\nnonsense\n")
	want := []string{"-c", "filter.lfs.clean=", "-c", "filter.lfs.smudge=", "-c", "filter.lfs.process=", "-c", "filter.lfs.required=false",
		"-c", "filter.a.b.clean=", "-c", "filter.a.b.smudge=", "-c", "filter.a.b.process=", "-c", "filter.a.b.required=false"}
	if !slices.Equal(got, want) {
		t.Errorf("filterOff = %q", got)
	}
}
