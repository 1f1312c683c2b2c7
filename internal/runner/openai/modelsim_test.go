package openai_test

import (
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/httpapi/apitest"
	"github.com/cadre-dev/cadre/internal/runner/openai"
)

// TestAgainstModelsim runs the runner against cadre's scripted model server.
func TestAgainstModelsim(t *testing.T) {
	apitest.AgainstModelsim(t, apitest.Modelsim{API: "openai", Busy: 429,
		Usage: event.Usage{InputTokens: 860, OutputTokens: 120, CacheReadTokens: 40},
		New: func(url string) (runner.Runner, error) {
			return openai.NewWith(runner.Settings{Name: "sim", URL: url, Model: "sim-model"}, openai.Deps{Getenv: func(string) string { return "" }})
		}})
}
