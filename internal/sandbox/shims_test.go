package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/proc"
)

// A version manager's shim on PATH (pyenv's, under the home the sandbox
// hides) runs inside the sandbox: the manager's root is visible,
// read-only; cargo's credentials beside rustup's proxies stay hidden.
func TestShimsRunConfined(t *testing.T) {
	needBwrap(t)
	home := t.TempDir()
	root := filepath.Join(home, ".pyenv")
	write := func(p, data string, mode os.FileMode) {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "libexec", "pyenv"), "#!/bin/sh\nexec \""+root+"/versions/3.11/bin/$2\"\n", 0o755)
	write(filepath.Join(root, "versions", "3.11", "bin", "tool"), "#!/bin/sh\necho managed tool\n", 0o755)
	write(filepath.Join(root, "shims", "tool"), "#!/bin/sh\nexec \""+root+"/libexec/pyenv\" exec tool \"$@\"\n", 0o755)
	write(filepath.Join(home, ".cargo", "credentials.toml"), "token = \"secret\"\n", 0o600)
	write(filepath.Join(home, ".cargo", "bin", "cargo"), "#!/bin/sh\necho cargo\n", 0o755)
	path := filepath.Join(root, "shims") + ":" + filepath.Join(home, ".cargo", "bin") + ":/usr/bin:/bin"
	env := []string{"PATH=" + path, "HOME=" + home}
	p := (&Policy{Bwrap: mustBwrap(t), Network: NetDeny}).ForItem(false, t.TempDir())
	dir := t.TempDir()
	prep, err := p.Prepare(context.Background(), Step{Dir: dir, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close()
	var log strings.Builder
	script := "tool; cargo; cat \"$HOME/.cargo/credentials.toml\" 2>&1 || echo hidden; touch \"" + root + "/planted\" 2>/dev/null && echo planted"
	res, err := proc.Run(context.Background(), proc.Spec{Path: "sh", Args: []string{"-c", script}, Dir: dir, Env: env, Log: &log, Sandbox: prep.Sandbox})
	if err != nil {
		t.Fatal(err)
	}
	out := log.String()
	if !strings.Contains(out, "managed tool") || !strings.Contains(out, "cargo") {
		t.Errorf("the shims did not run (exit %d):\n%s", res.ExitCode, out)
	}
	if strings.Contains(out, "secret") || !strings.Contains(out, "hidden") {
		t.Errorf("cargo's credentials were readable:\n%s", out)
	}
	if strings.Contains(out, "planted") {
		t.Errorf("the manager's root was writable:\n%s", out)
	}
}

func mustBwrap(t *testing.T) string {
	t.Helper()
	bw, err := proc.FindBwrap("")
	if err != nil {
		t.Skip(err)
	}
	return bw
}
