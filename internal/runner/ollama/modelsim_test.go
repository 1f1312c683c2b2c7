package ollama_test

import (
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/httpapi/apitest"
	"github.com/cadre-dev/cadre/internal/runner/ollama"
)

// TestAgainstModelsim runs the runner against cadre's scripted model server.
func TestAgainstModelsim(t *testing.T) {
	apitest.AgainstModelsim(t, apitest.Modelsim{API: "ollama", Busy: 429,
		Usage: event.Usage{InputTokens: 900, OutputTokens: 120},
		New: func(url string) (runner.Runner, error) {
			return ollama.NewWith(runner.Settings{Name: "sim", URL: url, Model: "sim-model"}, ollama.Deps{})
		}})
}
