package workspace

import (
	"context"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gitServer serves the bare repository bare over smart HTTP (git
// http-backend), answering 401 to a request without the Authorization
// header want, as GitHub does. It counts the requests that had it.
func gitServer(t *testing.T, bare, want string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("no git http-backend: %v", err)
	}
	var authed atomic.Int32
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(bare), "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=cadre"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		authed.Add(1)
		// CGI would hand the header to http-backend in its environment,
		// on this host: the remote is far away in real life.
		r.Header.Del("Authorization")
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &authed
}

// pollProc reads, until stop is closed, the environment, command line and
// open pipes' and files' targets of every process it can see, as an agent
// of the same user could, and reports whether canary was ever in them.
func pollProc(canary string, stop <-chan struct{}) (found *atomic.Bool, done *sync.WaitGroup) {
	found, done = &atomic.Bool{}, &sync.WaitGroup{}
	done.Add(1)
	go func() {
		defer done.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			procs, _ := filepath.Glob("/proc/[0-9]*")
			for _, p := range procs {
				for _, f := range []string{"environ", "cmdline"} {
					if b, err := os.ReadFile(filepath.Join(p, f)); err == nil && strings.Contains(string(b), canary) {
						found.Store(true)
					}
				}
			}
		}
	}()
	return found, done
}

// TestPushCredentialNotInProc: while cadre pushes to an HTTP remote that
// needs the credential, a process polling every /proc/PID/environ and
// cmdline it can see (as a same-user agent under sandbox.mode none could)
// never finds it; the push succeeds with the header reaching the remote.
// The same poller finds a canary in a process's environment, so it would
// have found the header git was once given in GIT_CONFIG_VALUE_0.
func TestPushCredentialNotInProc(t *testing.T) {
	ctx := context.Background()
	canary := "cadre-push-canary-" + strings.Repeat("x", 8)
	header := "Authorization: Basic " + canary

	// The poller works: a canary in a child's environment is found.
	stop := make(chan struct{})
	found, done := pollProc(canary, stop)
	cmd := exec.Command("sleep", "0.3")
	cmd.Env = []string{"SECRET=" + canary}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	done.Wait()
	if !found.Load() {
		t.Fatal("the poller did not see a canary in a process's environment: it proves nothing")
	}

	r := newRepo(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", bare).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	srv, authed := gitServer(t, bare, "Basic "+canary)
	write(t, filepath.Join(r.Dir, "f"), "x")
	sha, err := r.CommitAll(ctx, "m", Mark{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Git(ctx, "remote", "add", "origin", srv.URL+"/remote.git"); err != nil {
		t.Fatal(err)
	}
	// Without the header the remote refuses the push.
	if err := r.Push(ctx, "origin", "main", ""); err == nil {
		t.Fatal("the remote took a push without the credential")
	}
	stop = make(chan struct{})
	found, done = pollProc(canary, stop)
	for range 3 {
		if err := r.Push(ctx, "origin", "main", header); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	close(stop)
	done.Wait()
	if found.Load() {
		t.Error("the push credential was readable under /proc while cadre pushed")
	}
	if authed.Load() == 0 {
		t.Error("no request reached the remote with the credential")
	}
	out, _ := exec.Command("git", "-C", bare, "rev-parse", "refs/heads/main").Output()
	if strings.TrimSpace(string(out)) != sha {
		t.Errorf("remote main = %q, want %s", out, sha)
	}
}

// TestPushProxyServesOnlyGit: a connection to the push proxy from any
// process but the git push it was started for (here: the test itself, as
// an agent that found the port) is dropped, the header never used.
func TestPushProxyServesOnlyGit(t *testing.T) {
	var hits atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer up.Close()
	p, err := startPushProxy(up.URL+"/o/r.git", "Authorization: Basic c2VjcmV0")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sleep := exec.Command("sleep", "5")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer sleep.Process.Kill()
	p.gitStarted(sleep.Process.Pid) // some other process is the push
	c := &http.Client{Timeout: 5 * time.Second}
	if res, err := c.Get(p.base + "info/refs?service=git-receive-pack"); err == nil {
		res.Body.Close()
		t.Errorf("a stranger's request was answered %s", res.Status)
	}
	if hits.Load() != 0 {
		t.Errorf("the remote got %d requests through the proxy from a stranger", hits.Load())
	}
	// The same request from the process the proxy serves gets through.
	p2, err := startPushProxy(up.URL+"/o/r.git", "Authorization: Basic c2VjcmV0")
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	p2.gitStarted(os.Getpid())
	res, err := c.Get(p2.base + "info/refs?service=git-receive-pack")
	if err != nil {
		t.Fatalf("the served process's request failed: %v", err)
	}
	res.Body.Close()
	if hits.Load() != 1 {
		t.Errorf("remote hits %d, want 1", hits.Load())
	}
}
