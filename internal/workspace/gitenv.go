package workspace

import (
	"os"
	"strings"
)

// safeArgs come first on every git command line cadre runs. Each one
// switches off a way for a repository's configuration (or a file an agent
// planted in it) to run a program on cadre's behalf: hooks, the fsmonitor
// daemon, the ext:: transport that runs a command as a "remote", a pager.
// The others keep cadre's output stable and its runs free of background
// work.
var safeArgs = []string{
	"-c", "core.hooksPath=" + os.DevNull,
	"-c", "core.fsmonitor=false",
	"-c", "protocol.ext.allow=never",
	"-c", "core.pager=cat",
	"-c", "core.quotePath=false",
	"-c", "maintenance.auto=false",
	"-c", "gc.auto=0",
}

// identityVars are the only GIT_* variables of cadre's environment its git
// still sees: they name who commits and when, and can neither redirect git
// to another repository nor make it run anything.
var identityVars = map[string]bool{
	"GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true, "GIT_AUTHOR_DATE": true,
	"GIT_COMMITTER_NAME": true, "GIT_COMMITTER_EMAIL": true, "GIT_COMMITTER_DATE": true,
}

// gitEnviron is the environment of cadre's git: environ without its GIT_*
// variables (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE, GIT_CONFIG_PARAMETERS,
// GIT_CONFIG_COUNT, GIT_EXEC_PATH, GIT_SSH_COMMAND … would point git at
// another repository or make it run a program), the commit identity aside;
// then never a prompt on a terminal, then extra, which cadre sets itself.
func gitEnviron(environ, extra []string) []string {
	out := make([]string, 0, len(environ)+len(extra)+1)
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GIT_") && !identityVars[name] {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "GIT_TERMINAL_PROMPT=0")
	return append(out, extra...)
}
