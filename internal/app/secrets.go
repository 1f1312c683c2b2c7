package app

import (
	"cmp"
	"slices"
	"strings"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/runner"
)

// Secrets is a redactor of cadre's own secrets as getenv holds them: the
// code hosts' tokens, and every credential a runner type or a runner of cfg
// reads or passes to its agents (a model API's key, a CLI's key or token
// variables). A token cadre learns later (from gh) is added when it is.
func Secrets(cfg config.Config, reg *runner.Registry, getenv func(string) string) *redact.Redactor {
	names := cfg.ForgeTokenVars()
	if reg == nil {
		reg = runner.NewRegistry() // the code hosts' tokens only
	}
	for _, d := range reg.Descriptors() {
		names = append(names, d.KeyEnv)
		names = append(names, slices.DeleteFunc(slices.Clone(d.Env), notSecret)...)
	}
	for name, rc := range cfg.Runners {
		d, _ := reg.Describe(cmp.Or(rc.Type, name))
		env := slices.Clone(rc.Env)
		if d.Kind == runner.TypeAPI && len(env) > 0 {
			names = append(names, env[0]) // an API runner's key, whatever its name
		}
		names = append(names, slices.DeleteFunc(env, notSecret)...)
	}
	var values []string
	for _, n := range names {
		if n != "" {
			values = append(values, strings.TrimSpace(getenv(n)))
		}
	}
	return redact.New(values...)
}

// tokenEnv is the variable the GitHub token is read from.
func tokenEnv(cfg config.Config) string {
	return cmp.Or(strings.TrimSpace(cfg.GitHub.TokenEnv), forge.DefaultTokenEnv)
}

// notSecret says whether a variable's name does not say it holds a
// credential (an endpoint, a model, a directory).
func notSecret(name string) bool {
	n := strings.ToUpper(name)
	for _, suffix := range []string{"_KEY", "_TOKEN", "_SECRET", "_PASSWORD"} {
		if strings.HasSuffix(n, suffix) {
			return false
		}
	}
	return true
}
