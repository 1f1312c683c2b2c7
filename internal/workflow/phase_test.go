package workflow

import "testing"

// TestPhaseNumber: the context file's phase is the cadre workflow's number for the
// cadre workflow, the matching number for the stage pipeline's stages,
// and the phase's position in any other workflow.
func TestPhaseNumber(t *testing.T) {
	flows, err := LoadDefs("", nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		wf, phase string
		want      int
	}{
		{"cadre", "analysis", 1},
		{"cadre", "planning", 2},
		{"cadre", "implementation", 3},
		{"cadre", "integration", 4},
		{"cadre", "pr", 5},
		{"runner", "plan", 2},
		{"runner", "code", 3},
		{"runner", "audit", 4},
		{"loop", "loop", 1},
		{"loop", "finish", 2},
		{"auto", "triage", 1},
		{"standard", "work", 1},
		{"custom", "work", 1}, // triage's own role sequence
	}
	for _, tt := range tests {
		if got := flows.PhaseNumber(tt.wf, tt.phase); got != tt.want {
			t.Errorf("PhaseNumber(%s, %s) = %d, want %d", tt.wf, tt.phase, got, tt.want)
		}
	}
}
