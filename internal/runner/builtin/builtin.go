// Package builtin assembles the registry of every runner type cadre ships.
// It lives apart from package runner (which the backends import) so that the
// command line and the public Go API build runners from one list: a backend
// added here is reachable from cadre.yaml and from agent.NewRunner alike.
package builtin

import (
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

// Registry lists every runner type cadre has, in one place: each with its
// descriptor, in the order of preference among alike types (cadre init
// proposes the first agent CLI it finds). Model APIs and agent CLIs retry
// a rate-limited step after the pause the backend asks for, and a step
// whose connection was refused after a backoff (bounded); prices override
// the built-in price table (nil keeps it).
func Registry(prices map[string]price.Price) *runner.Registry {
	table := price.New(prices)
	rl := func(f runner.Factory) runner.Factory {
		priced := func(s runner.Settings) (runner.Runner, error) {
			s.Prices = table
			return f(s)
		}
		return retry.Factory(priced, retry.Policy{})
	}
	r := runner.NewRegistry()
	r.Add(execrunner.Type, execrunner.New)
	r.Add(script.Type, script.New)
	r.Add(claude.Type, rl(claude.New))
	r.Add(codex.Type, rl(codex.New))
	r.Add(gemini.Type, rl(gemini.New))
	r.Add(opencode.Type, rl(opencode.New))
	r.Add(qwen.Type, rl(qwen.New))
	r.Add(copilot.Type, rl(copilot.New))
	r.Add(crush.Type, rl(crush.New))
	r.Add(aider.Type, rl(aider.New))
	r.Add(anthropic.Type, rl(anthropic.New))
	r.Add(openai.Type, rl(openai.New))
	r.Add(ollama.Type, rl(ollama.New))
	return r
}

// Descriptors are the descriptors of every runner type of Registry, in its
// order.
func Descriptors() []runner.Descriptor { return Registry(nil).Descriptors() }
