package anthropic_test

import (
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/anthropic"
	"github.com/cadre-dev/cadre/internal/runner/httpapi/apitest"
)

// TestAgainstModelsim runs the runner against cadre's scripted model server.
func TestAgainstModelsim(t *testing.T) {
	apitest.AgainstModelsim(t, apitest.Modelsim{API: "anthropic", Busy: 529,
		Usage: event.Usage{InputTokens: 900, OutputTokens: 120, CacheReadTokens: 40},
		New: func(url string) (runner.Runner, error) {
			return anthropic.NewWith(runner.Settings{Name: "sim", URL: url, Model: "sim-model"}, anthropic.Deps{Getenv: func(string) string { return "" }})
		}})
}
