// Package builtin assembles the registry of every runner type cadre ships.
// It lives apart from package runner (which the backends import) so that the
// command line and the public Go API build runners from one list: a backend
// added here is reachable from cadre.yaml and from agent.NewRunner alike.
package builtin

import (
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/aider"
	"github.com/cadre-dev/cadre/internal/runner/anthropic"
	"github.com/cadre-dev/cadre/internal/runner/claude"
	"github.com/cadre-dev/cadre/internal/runner/codex"
	"github.com/cadre-dev/cadre/internal/runner/copilot"
	"github.com/cadre-dev/cadre/internal/runner/crush"
	execrunner "github.com/cadre-dev/cadre/internal/runner/exec"
	"github.com/cadre-dev/cadre/internal/runner/gemini"
	"github.com/cadre-dev/cadre/internal/runner/ollama"
	"github.com/cadre-dev/cadre/internal/runner/openai"
	"github.com/cadre-dev/cadre/internal/runner/opencode"
	"github.com/cadre-dev/cadre/internal/runner/price"
	"github.com/cadre-dev/cadre/internal/runner/qwen"
	"github.com/cadre-dev/cadre/internal/runner/retry"
	"github.com/cadre-dev/cadre/internal/runner/script"
)

// Registry lists every runner type cadre has, in one place. Model APIs and
// agent CLIs retry a rate-limited step after the pause the backend asks
// for (bounded); prices override the built-in price table (nil keeps it).
func Registry(prices map[string]config.Price) *runner.Registry {
	table := price.New(prices)
	rl := func(f runner.Factory) runner.Factory { return retry.Factory(f, retry.Policy{}) }
	r := runner.NewRegistry()
	r.Register("exec", execrunner.New)
	r.Register("script", script.New)
	r.Register("claude", rl(claude.New))
	r.Register("codex", rl(codex.WithPrices(table)))
	r.Register("gemini", rl(gemini.WithPrices(table)))
	r.Register("opencode", rl(opencode.New))
	r.Register("qwen", rl(qwen.WithPrices(table)))
	r.Register("copilot", rl(copilot.WithPrices(table)))
	r.Register("crush", rl(crush.New))
	r.Register("aider", rl(aider.New))
	r.Register("anthropic", rl(func(s runner.Settings) (runner.Runner, error) {
		return anthropic.NewWith(s, anthropic.Deps{Prices: table})
	}))
	r.Register("openai", rl(func(s runner.Settings) (runner.Runner, error) {
		return openai.NewWith(s, openai.Deps{Prices: table})
	}))
	r.Register("ollama", rl(ollama.New))
	return r
}
