package cli_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/cli"
)

// TestModelsimCommandServes runs cadre modelsim, reads the address it
// prints, asks it an Anthropic Messages question and stops it.
func TestModelsimCommandServes(t *testing.T) {
	dir := t.TempDir()
	scenario := filepath.Join(dir, "s.yaml")
	os.WriteFile(scenario, []byte("conversations:\n  - name: hi\n    match: {contains: hello}\n    turns:\n      - text: \"hi from modelsim\"\n"), 0o644)
	outR, outW := io.Pipe()
	f := cli.NewFactory()
	f.IO.Out, f.IO.ErrOut = outW, io.Discard
	cmd := cli.NewCmdModelsim(f)
	cmd.SetArgs([]string{"--scenario", scenario, "--log", filepath.Join(dir, "log.jsonl")})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx); outW.Close() }()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("first line %q", line)
	}
	resp, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "hi from modelsim") {
		t.Errorf("reply %s", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("modelsim ended with %v", err)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log.jsonl"))
	if !strings.Contains(string(log), `"rule":"hi"`) {
		t.Errorf("request log %s", log)
	}
}
