package app_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/runner/builtin"
)

// cadre's secrets are the code hosts' tokens (github.token_env's and
// gitlab.token_env's, and the variables gh and glab read), the keys
// the runner types read and the credentials they pass to agents, and an
// API runner's key under a variable of its own; not the endpoints, models
// and directories passed beside them.
func TestSecretsAreCadresCredentials(t *testing.T) {
	env := map[string]string{
		"GH_BOT_TOKEN":            "ghp_botToken0123456789",
		"GITHUB_TOKEN":            "ghp_notTheConfiguredOne",
		"GL_BOT":                  "glpat-botToken0123456789",
		"ANTHROPIC_API_KEY":       "sk-ant-key0123456789",
		"CLAUDE_CODE_OAUTH_TOKEN": "oauth-token-0123456789",
		"MY_GATEWAY_CREDENTIAL":   "gateway-0123456789",
		"OPENAI_BASE_URL":         "https://llm.example.com/v1",
		"CODEX_HOME":              "/home/someone/.codex",
		"UNRELATED_SECRET":        "unrelated-0123456789",
	}
	cfg := config.Default()
	cfg.GitHub.TokenEnv = "GH_BOT_TOKEN"
	cfg.GitLab.TokenEnv = "GL_BOT"
	cfg.Runners = map[string]config.RunnerConfig{"gateway": {Type: "openai", Env: []string{"MY_GATEWAY_CREDENTIAL"}}}
	r := app.Secrets(cfg, builtin.Registry(nil), func(k string) string { return env[k] })
	for _, k := range []string{"GH_BOT_TOKEN", "GITHUB_TOKEN", "GL_BOT", "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "MY_GATEWAY_CREDENTIAL"} {
		basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + env[k]))
		if got := r.String(env[k] + " " + basic); strings.Contains(got, env[k]) || strings.Contains(got, basic) {
			t.Errorf("%s not masked: %q", k, got)
		}
	}
	for _, k := range []string{"OPENAI_BASE_URL", "CODEX_HOME", "UNRELATED_SECRET"} {
		if got := r.String(env[k]); got != env[k] {
			t.Errorf("%s masked: %q", k, got)
		}
	}
	if got := r.String("x"); got != "x" || !strings.Contains(r.String(env["GH_BOT_TOKEN"]), redact.Mask) {
		t.Errorf("redactor %q", got)
	}
}
