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

// hostVars are the rest of cadre's environment its git sees: where
// programs and the user's own git configuration are, the locale, and the
// SSH agent for an ssh origin. Nothing else: a git process is readable
// under /proc by the agents (same user), so cadre's secrets (the GitHub
// token, model API keys) must not sit in its environment.
var hostVars = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "EMAIL": true, "LANG": true, "LC_ALL": true,
	"LC_CTYPE": true, "LC_MESSAGES": true, "TZ": true, "TMPDIR": true, "XDG_CONFIG_HOME": true, "SSH_AUTH_SOCK": true,
}

// gitEnviron is the environment of cadre's git: of environ, only hostVars
// and the commit identity (no GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE,
// GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT, GIT_EXEC_PATH, GIT_SSH_COMMAND …,
// which would point git at another repository or make it run a program,
// and no secret); then never a prompt on a terminal, then extra, which
// cadre sets itself.
func gitEnviron(environ, extra []string) []string {
	out := make([]string, 0, len(hostVars)+len(extra)+1)
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if hostVars[name] || identityVars[name] {
			out = append(out, kv)
		}
	}
	out = append(out, "GIT_TERMINAL_PROMPT=0")
	return append(out, extra...)
}
