package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/store"
)

// journalWith gives the repository in dir a journal holding run.
func journalWith(t *testing.T, dir, run string) {
	t.Helper()
	ctx := context.Background()
	os.MkdirAll(filepath.Join(dir, ".cadre"), 0o755)
	st, err := store.Open(ctx, filepath.Join(dir, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateRun(ctx, store.Run{ID: run, Repo: dir, Workflow: "runner"}); err != nil {
		t.Fatal(err)
	}
}

// cadre serve --repo A --repo B serves both journals, each under its own
// key (the second repository named like the first gets another one), and
// a --repo naming a repository already given adds nothing.
func TestServeSeveralRepositories(t *testing.T) {
	a, home := boardRepo(t)
	b, _ := boardRepo(t)
	journalWith(t, a, "20261124-100000-aaaa")
	journalWith(t, b, "20261125-110000-bbbb")
	cmd := exec.Command("cadre", "serve", "--repo", a, "--repo", b, "--repo", filepath.Join(a, "tasks"), "--addr", "127.0.0.1:0")
	cmd.Dir = t.TempDir() // outside both: only the --repo flags say what to show
	cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	boardURL := regexp.MustCompile(`board at (http://\S+/)`)
	var url string
	for deadline := time.Now().Add(20 * time.Second); url == ""; time.Sleep(20 * time.Millisecond) {
		if m := boardURL.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no board address printed; stderr:\n%s", stderr.String())
		}
	}

	var repos []struct{ Key, Name, Dir string }
	getAPI(t, url+"api/repos", &repos)
	if len(repos) != 2 || repos[0].Key != "repo" || repos[0].Dir != a || repos[1].Key != "repo-2" || repos[1].Dir != b {
		t.Fatalf("repos = %+v, want repo (%s) and repo-2 (%s)", repos, a, b)
	}
	for key, want := range map[string]string{"repo": "20261124-100000-aaaa", "repo-2": "20261125-110000-bbbb"} {
		var runs []struct{ ID string }
		getAPI(t, url+"api/repos/"+key+"/runs", &runs)
		if len(runs) != 1 || runs[0].ID != want {
			t.Errorf("runs of %s = %+v, want only %s", key, runs, want)
		}
	}
}

func getAPI(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
