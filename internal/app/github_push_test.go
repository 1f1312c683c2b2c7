package app_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
)

// A push URL on a host other than GitHub's (a pushurl an unconfined agent
// wrote into .git/config, say) is refused before anything is sent: the
// token goes to the GitHub host only.
func TestPushTokenOnlyToGitHubHost(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()

	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "init"},
		{"remote", "add", "origin", "https://github.com/acme/widgets.git"},
		{"config", "remote.origin.pushurl", srv.URL + "/acme/widgets.git"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	const token = "ghp_secret0123456789"
	getenv := func(k string) string {
		if k == "GITHUB_TOKEN" {
			return token
		}
		return ""
	}
	for _, c := range []struct{ apiURL, host string }{
		{"https://api.github.com/", "github.com"},
		{"https://api.octo.ghe.com/", "octo.ghe.com"},         // GitHub Enterprise Cloud
		{"https://ghe.example.com/api/v3", "ghe.example.com"}, // GitHub Enterprise Server
	} {
		cfg := config.Default()
		cfg.GitHub.APIURL = c.apiURL
		g := app.NewGitHub(app.Workspace{Root: dir, Config: cfg}, getenv)
		err := g.Push(context.Background(), dir, "main")
		if err == nil {
			t.Fatalf("%s: push to a pushurl off GitHub went through", c.apiURL)
		}
		if want := "origin's push URL is on 127.0.0.1, not on " + c.host + ","; !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q, want it to say %q", c.apiURL, err, want)
		}
		if strings.Contains(err.Error(), token) {
			t.Errorf("error carries the token: %q", err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the other host got %d request(s)", n)
	}
}

// A branch whose commits since the base carry the token (an agent that
// committed it itself, in a message or a file, in any spelling) is not
// pushed; a clean one is.
func TestPushRefusesABranchCarryingTheToken(t *testing.T) {
	const token = "ghp_pushSecret0123456789"
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	for name, commit := range map[string][]string{
		"message": {"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "debug: " + token},
		"file":    {"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "add notes", "--", "notes.txt"},
		"clean":   {"-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "fine"},
	} {
		t.Run(name, func(t *testing.T) {
			dir, bare := t.TempDir(), t.TempDir()
			git := func(dir string, args ...string) {
				t.Helper()
				cmd := exec.Command("git", args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("git %v: %v\n%s", args, err, out)
				}
			}
			git(bare, "init", "-q", "--bare")
			git(dir, "init", "-q", "-b", "main")
			git(dir, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "init")
			git(dir, "remote", "add", "origin", bare)
			git(dir, "checkout", "-q", "-b", "cadre/1-work")
			if name == "file" {
				os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("auth: Basic "+basic+"\n"), 0o644)
				git(dir, "add", "notes.txt")
			}
			git(dir, commit...)
			git(dir, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "later")
			g := app.NewGitHub(app.Workspace{Root: dir, Config: config.Default()}, func(k string) string {
				return map[string]string{"GITHUB_TOKEN": token}[k]
			})
			err := g.Push(context.Background(), dir, "cadre/1-work")
			pushed := exec.Command("git", "-C", bare, "rev-parse", "--verify", "-q", "refs/heads/cadre/1-work").Run() == nil
			if name == "clean" {
				if err != nil || !pushed {
					t.Fatalf("a clean branch: %v, pushed %v", err, pushed)
				}
				return
			}
			if err == nil || pushed || !strings.Contains(err.Error(), "carries a secret of cadre's") || strings.Contains(err.Error(), token) {
				t.Errorf("push: %v, pushed %v; want it refused, naming the commit", err, pushed)
			}
		})
	}
}
