package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/modelsim"
)

// ModelsimOptions are the arguments of cadre modelsim.
type ModelsimOptions struct {
	Scenario string
	Addr     string
	Log      string // request log file; empty logs to stderr
}

// NewCmdModelsim builds cadre modelsim.
func NewCmdModelsim(f *Factory) *cobra.Command {
	opts := &ModelsimOptions{}
	cmd := &cobra.Command{
		Use:   "modelsim --scenario FILE [--addr 127.0.0.1:0]",
		Short: "Serve scripted model answers over the Anthropic, OpenAI, Gemini and Ollama APIs",
		Long: `Run a local model server that answers from a scenario file with text and tool calls, so
real agent CLIs (Claude Code, Codex, Gemini CLI) and cadre's API runners work end to end with
no network and no cost. The first line on stdout is "listening on http://HOST:PORT"; point a
client's base URL there. Every request is logged as one JSON line (API, model, matched rule,
turn, request bytes, tokens) to --log, or to stderr. The scenario format is in docs/modelsim.md.

Routes: POST /v1/messages (Anthropic), /v1/chat/completions and /v1/responses (OpenAI),
/v1beta/models/MODEL:generateContent and :streamGenerateContent (Gemini), /api/chat (Ollama).
The server runs until interrupted.

EXIT STATUS
  0  stopped by an interrupt
  1  the server failed while serving
  2  usage error, bad scenario file, or the address cannot be listened on`,
		Example: `  cadre modelsim --scenario testdata/hello.yaml
  cadre modelsim --scenario sim.yaml --addr 127.0.0.1:8089 --log requests.jsonl

  # in another shell, with the printed address:
  ANTHROPIC_BASE_URL=http://127.0.0.1:8089 ANTHROPIC_API_KEY=any claude -p "hi" --output-format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runModelsim(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Scenario, "scenario", "", "scenario file (YAML) to answer from (required)")
	cmd.Flags().StringVar(&opts.Addr, "addr", "127.0.0.1:0", "address to listen on; port 0 picks a free port")
	cmd.Flags().StringVar(&opts.Log, "log", "", "append the request log (JSON lines) to this file instead of stderr")
	return cmd
}

func runModelsim(ctx context.Context, f *Factory, opts *ModelsimOptions) error {
	if opts.Scenario == "" {
		return usageErr(errors.New("--scenario FILE is required (see docs/modelsim.md for the format)"))
	}
	sc, err := modelsim.Load(opts.Scenario)
	if err != nil {
		return usageErr(err)
	}
	var log io.Writer = f.IO.ErrOut
	if opts.Log != "" {
		lf, err := os.OpenFile(opts.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return usageErr(fmt.Errorf("--log: %w", err))
		}
		defer lf.Close()
		log = lf
	}
	srv, err := modelsim.Start(ctx, opts.Addr, modelsim.New(sc, log))
	if err != nil {
		return usageErr(fmt.Errorf("--addr: %w", err))
	}
	fmt.Fprintf(f.IO.Out, "listening on %s\n", srv.URL)
	if err := srv.Wait(); err != nil {
		return fmt.Errorf("modelsim: %w", err)
	}
	return nil
}
