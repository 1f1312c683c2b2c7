package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/runspec"
)

// A Temporal run's heartbeat timeout is recorded with its target, so that
// cadre resume gives its steps the one the run started with, unless
// --heartbeat-timeout says otherwise.
func TestTemporalTargetHeartbeat(t *testing.T) {
	cfg := config.Default()
	started := temporalTarget(cfg, TemporalOptions{Heartbeat: 7 * time.Second}, nil)
	if started.Heartbeat != 7*time.Second {
		t.Fatalf("new run: heartbeat %s, want 7s", started.Heartbeat)
	}
	// As the journal keeps it: in the run's options.
	b, err := json.Marshal(runspec.Options{Temporal: &started})
	if err != nil {
		t.Fatal(err)
	}
	var stored runspec.Options
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	if got := temporalTarget(cfg, TemporalOptions{}, stored.Temporal); got != started {
		t.Errorf("resume: target %+v, want the recorded %+v", got, started)
	}
	if got := temporalTarget(cfg, TemporalOptions{Heartbeat: 12 * time.Second}, stored.Temporal).Heartbeat; got != 12*time.Second {
		t.Errorf("resume --heartbeat-timeout 12s: heartbeat %s", got)
	}
	if got := temporalTarget(cfg, TemporalOptions{}, nil).Heartbeat; got != 0 {
		t.Errorf("new run without the flag: heartbeat %s, want 0 (the default)", got)
	}
}
