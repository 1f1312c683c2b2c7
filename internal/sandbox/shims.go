package sandbox

import (
	"os"
	"path/filepath"
	"slices"
)

// versionManagers are the tool version managers whose shims or bin
// directories sit on PATH under the user's home: a shim runs the manager's
// own code, which reads the version to run (and runs it) from the
// manager's root. Each is found by its variable, else where it lives by
// default under the home; bin is where its programs on PATH are, relative
// to the root, and roots what a step must see of it (default: the root).
var versionManagers = []struct {
	env, home string
	roots     []string // relative to the home, when not the root itself
}{
	{env: "PYENV_ROOT", home: ".pyenv"},
	{env: "RBENV_ROOT", home: ".rbenv"},
	{env: "GOENV_ROOT", home: ".goenv"},
	{env: "NODENV_ROOT", home: ".nodenv"},
	{env: "ASDF_DATA_DIR", home: ".asdf"},
	{env: "NVM_DIR", home: ".nvm"},
	{env: "MISE_DATA_DIR", home: ".local/share/mise"},
	{env: "VOLTA_HOME", home: ".volta"},
	{env: "SDKMAN_DIR", home: ".sdkman"},
	// rustup's proxies are in cargo's bin; cargo's home also holds its
	// credentials, which stay hidden: only its bin and rustup's home.
	{env: "", home: ".cargo/bin", roots: []string{".cargo/bin", ".rustup"}},
}

// managerRoots are the version managers' directories a step must see,
// read-only, for the programs PATH finds under them to run: a pyenv shim
// on PATH needs pyenv's whole root (its libexec and versions).
func managerRoots(pathList, home string, getenv func(string) string) []string {
	if !filepath.IsAbs(home) {
		return nil
	}
	var out []string
	for _, m := range versionManagers {
		root := filepath.Join(home, m.home)
		if v := getenv(m.env); m.env != "" && filepath.IsAbs(v) {
			root = v
		}
		used := false
		for _, d := range filepath.SplitList(pathList) {
			used = used || filepath.IsAbs(d) && inside(d, root)
		}
		if !used {
			continue
		}
		dirs := []string{root}
		if m.roots != nil {
			dirs = nil
			for _, r := range m.roots {
				dirs = append(dirs, filepath.Join(home, r))
			}
		}
		for _, d := range dirs {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() && !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return out
}
