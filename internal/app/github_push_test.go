package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
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
