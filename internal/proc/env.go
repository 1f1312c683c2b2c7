package proc

import (
	"sort"
	"strings"
)

// baseEnv lists the variables every agent gets when the orchestrator has them:
// enough to find programs, locate a home directory and render text.
var baseEnv = [...]string{"PATH", "HOME", "LANG", "TERM"}

// MinimalEnv builds an environment holding only PATH, HOME, LANG and TERM
// (those present in lookup), plus the keys listed in pass (taken from lookup
// if present), plus set, whose values win. The result is sorted "KEY=value"
// entries, so the same inputs always give the same environment. A nil lookup
// contributes nothing. Keys that are empty or contain '=' or NUL cannot be
// expressed in an environment and are dropped.
func MinimalEnv(lookup func(string) (string, bool), pass []string, set map[string]string) []string {
	vars := make(map[string]string)
	take := func(key string) {
		if lookup == nil || !validKey(key) {
			return
		}
		if v, ok := lookup(key); ok {
			vars[key] = v
		}
	}
	for _, k := range baseEnv {
		take(k)
	}
	for _, k := range pass {
		take(k)
	}
	for k, v := range set {
		if validKey(k) {
			vars[k] = v
		}
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		env = append(env, k+"="+vars[k])
	}
	return env
}

func validKey(k string) bool {
	return k != "" && !strings.ContainsAny(k, "=\x00")
}

// SetEnv returns env with the variables of set replacing or added to it,
// sorted.
func SetEnv(env []string, set map[string]string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		if _, ok := set[k]; !ok {
			out = append(out, e)
		}
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
