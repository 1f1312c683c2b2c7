package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// brokenBwrap fails as bubblewrap does where the kernel forbids it
// namespaces, so sandbox.mode auto falls back to no confinement.
const brokenBwrap = "#!/bin/sh\necho 'bwrap: No permissions to create a new namespace' >&2\nexit 1\n"

// TestStrangerRefusedUnconfined: where bubblewrap cannot work, a
// stranger's issue does not run: exit 2 and one line naming the item and
// sandbox.allow_unconfined, with nothing said on the issue and no run
// made. With allow_unconfined: true it runs, with the warning; so does an
// issue of an author github.authors lists, without it.
func TestStrangerRefusedUnconfined(t *testing.T) {
	g := newGitHubRepo(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "bwrap"), []byte(brokenBwrap), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	config := func(extra string) {
		t.Helper()
		yaml := "repository: acme/widgets\ngithub: {api_url: \"" + g.fake.URL + "\"" + extra + "}\n" +
			"defaults: {runner: fake, workflow: simple}\nrunners:\n  fake: {type: script, scenario: scenario.yaml}\n"
		if err := os.WriteFile(filepath.Join(g.dir, "cadre.yaml"), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config("")

	want := "cadre: item 1 is untrusted (its author is not in github.authors) and nothing would confine it " +
		"(sandbox.mode auto, and bubblewrap does not work here): make bubblewrap work here, or set sandbox.allow_unconfined: true to run it unconfined\n"
	// The dry run refuses what the run would.
	for _, args := range [][]string{{"run", "--dry-run", "1"}, {"run", "1"}} {
		code, out, errOut := g.cadre(t, "", args...)
		if code != 2 || !strings.HasSuffix(errOut, want) || strings.Count(errOut, "cadre: ") != 1 {
			t.Fatalf("cadre %s: exit %d, stderr:\n%s\nwant exit 2 and the last line %q\n%s", strings.Join(args, " "), code, errOut, want, out)
		}
	}
	if cs := g.fake.Comments("acme", "widgets", 1); len(cs) != 0 {
		t.Errorf("the issue was told %+v", cs)
	}
	if runs, _ := os.ReadDir(filepath.Join(g.dir, ".cadre", "runs")); len(runs) != 0 {
		t.Errorf("a refused run left %v", runs)
	}
	if len(g.fake.PRs("acme", "widgets")) != 0 {
		t.Error("a pull request was opened")
	}

	// The explicit override: it runs, unconfined, and says so.
	os.WriteFile(filepath.Join(g.dir, "cadre.yaml"), append(must(os.ReadFile(filepath.Join(g.dir, "cadre.yaml"))), "sandbox: {allow_unconfined: true}\n"...), 0o644)
	code, out, errOut := g.cadre(t, "", "run", "1")
	if code != 0 || !strings.Contains(errOut+out, "sandbox.mode auto: agents run unconfined") {
		t.Fatalf("allow_unconfined: exit %d\n%s\n%s", code, errOut, out)
	}

	// A trusted item runs with the warning alone.
	config(", authors: [bob]")
	code, out, errOut = g.cadre(t, "", "run", "2")
	if code != 0 || !strings.Contains(errOut+out, "sandbox.mode auto: agents run unconfined") {
		t.Fatalf("trusted item: exit %d\n%s\n%s", code, errOut, out)
	}
	if n := len(g.fake.PRs("acme", "widgets")); n != 2 {
		t.Errorf("%d pull requests, want one per issue run", n)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
