package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A configuration file written just now (within racyWindow) is
// fingerprinted by its content: cacheable at once, yet a rewrite of the
// same size that puts the modification time back still changes the
// fingerprint.
func TestRacyFingerprintTakesContent(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config")
	write(t, p, "[filter \"x\"]\n\tclean = a\n")
	fi, _ := os.Stat(p)
	fp := fingerprint([]string{p})
	if fp == "" {
		t.Fatal("no fingerprint for a file just written")
	}
	if again := fingerprint([]string{p}); again != fp {
		t.Fatalf("fingerprint of an unchanged file moved:\n%q\n%q", fp, again)
	}
	write(t, p, "[filter \"x\"]\n\tclean = b\n")
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	if fingerprint([]string{p}) == fp {
		t.Error("a same-size rewrite with the old time kept the fingerprint")
	}
}

// The filter drivers are read with the configuration's origins, and a
// driver added while the configuration is racy is still switched off.
func TestRacyConfigFiltersFollowChanges(t *testing.T) {
	ctx := context.Background()
	r := newIsolatedRepo(t)
	u := r.Untrusted()
	for _, key := range []string{"filter.x.clean", "filter.y.smudge"} {
		if _, err := r.Git(ctx, "config", key, "touch ran"); err != nil {
			t.Fatal(err)
		}
		driver := strings.Split(key, ".")[1]
		if opts := strings.Join(u.withFilters(ctx, nil), " "); !strings.Contains(opts, "filter."+driver+".clean=") {
			t.Errorf("%s: filter %s not switched off: %s", key, driver, opts)
		}
	}
	c := u.gitCache()
	if !c.haveFilters || !strings.Contains(c.filters, "filter.x.clean\n") || !strings.Contains(c.filters, "filter.y.smudge\n") {
		t.Errorf("filters kept %t: %q", c.haveFilters, c.filters)
	}
}

// Commits name the configured author, read with the configuration
// listing; a repository with none gets cadre's.
func TestCommitterFromConfiguration(t *testing.T) {
	ctx := context.Background()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	for _, email := range []string{"t@example.com", ""} {
		r := newRepo(t)
		if email == "" {
			r.Git(ctx, "config", "--unset", "user.email")
			r = &Repo{Dir: r.Dir}
		}
		write(t, filepath.Join(r.Dir, "f.txt"), "x\n")
		if _, err := r.CommitAll(ctx, "c", Mark{}); err != nil {
			t.Fatal(err)
		}
		want := email
		if want == "" {
			want = "cadre@localhost"
		}
		if got, _ := r.Git(ctx, "log", "-1", "--format=%ae"); strings.TrimSpace(got) != want {
			t.Errorf("author %q, want %q", strings.TrimSpace(got), want)
		}
	}
}

// The origins are the files configuration comes from besides the base
// ones, each once however many settings it holds: every stamp stats them.
func TestConfigOriginsOnce(t *testing.T) {
	ctx := context.Background()
	r := newIsolatedRepo(t)
	inc := filepath.Join(t.TempDir(), "extra.cfg")
	write(t, inc, "[a]\n\tx = 1\n\ty = 2\n\tz = 3\n")
	if _, err := r.Git(ctx, "config", "include.path", inc); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.gitDirs(ctx); err != nil {
		t.Fatal(err)
	}
	c := r.gitCache()
	c.mu.Lock()
	got := r.configOrigins(ctx, c)
	c.mu.Unlock()
	if len(got) != 1 || got[0] != inc {
		t.Errorf("origins %q, want only %s", got, inc)
	}
}
