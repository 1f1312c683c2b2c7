package sandbox

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestAllowed(t *testing.T) {
	allow := []string{"api.example.com:443", "Pypi.org", "127.0.0.1:8080"}
	for host, want := range map[string]bool{
		"api.example.com:443":  true,
		"api.example.com:80":   false,
		"pypi.org:443":         true,
		"PYPI.ORG:8443":        true,
		"evil.pypi.org:443":    false,
		"127.0.0.1:8080":       true,
		"127.0.0.1:8081":       false,
		"127.0.0.2:8080":       false,
		"api.example.com.:443": false,
	} {
		if got := allowed(allow, host); got != want {
			t.Errorf("allowed(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestModelHosts(t *testing.T) {
	st := Step{Hosts: []string{"https://api.anthropic.com", "http://127.0.0.1:9000/v1"},
		Env: []string{"HOME=/h", "OPENAI_BASE_URL=http://localhost:7000", "OTHER_URL=http://x:1", "BAD_BASE_URL=nonsense"}}
	got := modelHosts(st, []string{"pypi.org"})
	want := []string{"127.0.0.1:9000", "api.anthropic.com:443", "localhost:7000", "pypi.org"}
	if !slices.Equal(got, want) {
		t.Errorf("modelHosts = %q, want %q", got, want)
	}
	if lp := loopbackPorts(got); !slices.Equal(lp, []string{"127.0.0.1:9000", "127.0.0.1:7000"}) {
		t.Errorf("loopbackPorts = %q", lp)
	}
}

// TestProxy: an allowed host is reached by CONNECT and by plain HTTP; any
// other is answered 403 and reported, and never dialled.
func TestProxy(t *testing.T) {
	allowedSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "model %s", r.URL.Path)
	}))
	defer allowedSrv.Close()
	var hit sync.Mutex
	forbiddenHits := 0
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit.Lock()
		forbiddenHits++
		hit.Unlock()
	}))
	defer forbidden.Close()
	okHost := strings.TrimPrefix(allowedSrv.URL, "http://")
	badHost := strings.TrimPrefix(forbidden.URL, "http://")

	var warned []string
	var mu sync.Mutex
	px, err := StartProxy([]string{okHost}, func(h string) { mu.Lock(); warned = append(warned, h); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()

	client := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(mustURL(t, "http://proxy")),
		Dial:  func(_, _ string) (net.Conn, error) { return net.Dial("unix", px.Socket) },
	}}
	resp, err := client.Get(allowedSrv.URL + "/plain")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "model /plain" {
		t.Errorf("plain HTTP through the proxy: %d %q", resp.StatusCode, body)
	}
	resp, err = client.Get(forbidden.URL + "/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "sandbox.allow_hosts") {
		t.Errorf("forbidden host: %d %q", resp.StatusCode, body)
	}

	for host, want := range map[string]string{okHost: "200", badHost: "403"} {
		c, err := net.Dial("unix", px.Socket)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", host, host)
		br := bufio.NewReader(c)
		line, _ := br.ReadString('\n')
		if !strings.Contains(line, " "+want+" ") {
			t.Errorf("CONNECT %s: %q, want %s", host, line, want)
		}
		if want == "200" {
			for l, _ := br.ReadString('\n'); l != "\r\n" && l != ""; l, _ = br.ReadString('\n') {
			}
			fmt.Fprintf(c, "GET /tunnel HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
			rest, _ := io.ReadAll(br)
			if !strings.Contains(string(rest), "model /tunnel") {
				t.Errorf("through the tunnel: %q", rest)
			}
		}
		c.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warned) != 2 || warned[0] != badHost || warned[1] != badHost {
		t.Errorf("warnings %q, want %s twice", warned, badHost)
	}
	hit.Lock()
	defer hit.Unlock()
	if forbiddenHits != 0 {
		t.Errorf("the forbidden server was reached %d times", forbiddenHits)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestCopyHome: only the listed files are copied; a symbolic link among
// them is not followed, so it cannot carry a host file into the sandbox.
func TestCopyHome(t *testing.T) {
	from, to := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(from, ".tool", "history"), 0o755)
	os.WriteFile(filepath.Join(from, ".tool", "config"), []byte("c"), 0o600)
	os.WriteFile(filepath.Join(from, ".tool", "history", "h"), []byte("h"), 0o600)
	os.WriteFile(filepath.Join(from, ".ssh-key"), []byte("secret"), 0o600)
	os.Symlink(filepath.Join(from, ".ssh-key"), filepath.Join(from, ".tool", "auth"))
	os.MkdirAll(filepath.Join(from, ".other"), 0o755)
	if err := copyHome(from, to, []string{".tool/config", ".tool/auth", ".missing", ".other/none"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	filepath.WalkDir(to, func(p string, d os.DirEntry, err error) error {
		r, _ := filepath.Rel(to, p)
		got = append(got, r)
		return nil
	})
	want := []string{".", ".other", ".tool", ".tool/config"}
	if !slices.Equal(got, want) {
		t.Errorf("home holds %q, want %q", got, want)
	}
	if err := copyHome(from, to, []string{"../etc"}); err == nil {
		t.Error("a path outside the home was accepted")
	}
}

// TestGitPaths: a worktree's .git file, the repository's git directory it
// points into, both read-only; a plain checkout's .git directory alone.
func TestGitPaths(t *testing.T) {
	root := t.TempDir()
	main := filepath.Join(root, "main")
	wtGit := filepath.Join(main, ".git", "worktrees", "t")
	os.MkdirAll(wtGit, 0o755)
	os.WriteFile(filepath.Join(wtGit, "commondir"), []byte("../..\n"), 0o644)
	wt := filepath.Join(root, "wt")
	os.MkdirAll(wt, 0o755)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+wtGit+"\n"), 0o644)
	if got, want := gitPaths(wt), []string{filepath.Join(wt, ".git"), filepath.Join(main, ".git")}; !slices.Equal(got, want) {
		t.Errorf("worktree: %q, want %q", got, want)
	}
	if got, want := gitPaths(main), []string{filepath.Join(main, ".git")}; !slices.Equal(got, want) {
		t.Errorf("checkout: %q, want %q", got, want)
	}
	if got := gitPaths(t.TempDir()); got != nil {
		t.Errorf("no git: %q", got)
	}
}

// TestPrepareHome: a step with no home files gets a home of the sandbox's
// own over the user's, nothing made on the host; one with home files gets
// a directory holding their copies, removed by Close; without a usable
// home, the fresh directory is the home.
func TestPrepareHome(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	host := t.TempDir()
	os.WriteFile(filepath.Join(host, ".toolrc"), []byte("key"), 0o600)
	p := (&Policy{Bwrap: "/usr/bin/bwrap", Network: NetDeny}).ForItem(true, t.TempDir())

	prep, err := p.Prepare(t.Context(), Step{Env: []string{"HOME=" + host}})
	if err != nil {
		t.Fatal(err)
	}
	if prep.Sandbox.Home != "" || prep.Sandbox.HomePath != host {
		t.Errorf("no home files: Home %q HomePath %q, want a home of the sandbox's own at %s", prep.Sandbox.Home, prep.Sandbox.HomePath, host)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("made on the host: %v", entries)
	}
	prep.Close()

	prep, err = p.Prepare(t.Context(), Step{Env: []string{"HOME=" + host}, HomeFiles: []string{".toolrc"}})
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(prep.Sandbox.Home, ".toolrc")); string(data) != "key" || prep.Sandbox.HomePath != host {
		t.Errorf("home files: %q copied into %q at %q", data, prep.Sandbox.Home, prep.Sandbox.HomePath)
	}
	prep.Close()
	if _, err := os.Stat(prep.Sandbox.Home); err == nil {
		t.Error("Close left the copied home")
	}

	prep, err = p.Prepare(t.Context(), Step{Env: []string{"HOME=/"}})
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close()
	if prep.Sandbox.Home == "" || prep.Sandbox.HomePath != prep.Sandbox.Home || prep.Env["HOME"] != prep.Sandbox.Home {
		t.Errorf("no usable home: Home %q HomePath %q HOME %q", prep.Sandbox.Home, prep.Sandbox.HomePath, prep.Env["HOME"])
	}
}

// TestPrepareProxyOnlyWithHosts: under model-only a step with a model
// endpoint or allowed hosts gets the proxy and its bridge; one with
// nothing it may reach (a project command, no allow_hosts) gets neither,
// and is as confined: no network of the host's.
func TestPrepareProxyOnlyWithHosts(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	for _, tt := range []struct {
		name  string
		allow []string
		hosts []string
		proxy bool
	}{
		{"nothing to reach", nil, nil, false},
		{"a model endpoint", nil, []string{"https://api.example.com"}, true},
		{"allow_hosts", []string{"pypi.org"}, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := (&Policy{Bwrap: "/usr/bin/bwrap", Network: NetModelOnly, AllowHosts: tt.allow, Helper: "/bin/cadre"}).ForItem(false, t.TempDir())
			prep, err := p.Prepare(t.Context(), Step{Env: []string{"HOME=/root"}, Hosts: tt.hosts})
			if err != nil {
				t.Fatal(err)
			}
			defer prep.Close()
			if got := len(prep.Sandbox.Wrap) > 0 && prep.Env["HTTPS_PROXY"] != ""; got != tt.proxy {
				t.Errorf("proxy and bridge %t, want %t (wrap %q)", got, tt.proxy, prep.Sandbox.Wrap)
			}
			if prep.Sandbox.Net {
				t.Error("the host's network is shared")
			}
		})
	}
}
