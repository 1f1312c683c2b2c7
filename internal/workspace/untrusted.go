package workspace

import (
	"context"
	"os"
	"strings"
)

// filterKeys matches the settings that define a filter driver.
const filterKeys = `^filter\..*\.(clean|smudge|process|required)$`

// Untrusted is a handle on the same working tree whose git commands run no
// filter driver (clean, smudge, process): a .gitattributes line such as
// "* filter=x" in a stranger's tree, matched by any filter.x.* command in
// git's configuration, would otherwise run that command whenever cadre
// stages, commits or checks out. Content is committed as it is in the tree.
func (r *Repo) Untrusted() *Repo {
	c := r.child(r.Dir)
	c.untrusted = true
	c.cache = r.gitCache()
	return c
}

// IsUntrusted says whether r runs no filter driver.
func (r *Repo) IsUntrusted() bool { return r.untrusted }

// withFilters puts before args the options that switch off every filter
// driver git's configuration defines, when r is untrusted. The list is read
// again whenever a configuration file changed (filterConfig), so a driver
// added during the run is switched off too.
func (r *Repo) withFilters(ctx context.Context, args []string) []string {
	if !r.untrusted || (len(args) > 0 && args[0] == "config") {
		return args
	}
	return append(filterOff(r.filterConfig(ctx)), args...)
}

// filterOff turns the names of filter.<driver>.<key> settings into the -c
// options that empty each driver's commands: git runs no filter whose
// command is empty, and a driver marked required then fails no command.
func filterOff(names string) []string {
	var opts []string
	seen := map[string]bool{}
	for _, line := range strings.Split(names, "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "filter.")
		i := strings.LastIndexByte(rest, '.')
		if !ok || i <= 0 {
			continue
		}
		driver := rest[:i]
		if seen[driver] {
			continue
		}
		seen[driver] = true
		for _, kv := range []string{".clean=", ".smudge=", ".process=", ".required=false"} {
			opts = append(opts, "-c", "filter."+driver+kv)
		}
	}
	return opts
}

// AgentGitConfig is the configuration ("key=value") an agent's own git
// commands get in an untrusted tree: no hooks, no fsmonitor, no ext::
// transport, and every filter driver now defined switched off.
func (r *Repo) AgentGitConfig(ctx context.Context) []string {
	kv := []string{"core.hooksPath=" + os.DevNull, "core.fsmonitor=false", "protocol.ext.allow=never"}
	opts := filterOff(r.filterConfig(ctx))
	for i := 1; i < len(opts); i += 2 {
		kv = append(kv, opts[i])
	}
	return kv
}
