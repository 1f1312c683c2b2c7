package reply

import (
	"errors"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/signal"
)

const block = "### SIGNAL BLOCK\n- Result: SUCCESS\n- Confidence: 8\n"

func TestOutput(t *testing.T) {
	tests := []struct {
		name, file, reply, want string
		merged                  bool
	}{
		{"no file: the reply", "", "done\n" + block, "done\n" + block, false},
		{"blank file: the reply", " \n", "r", "r", false},
		{"file with its own block wins", "# Work\n" + block, "other\n" + block, "# Work\n" + block, false},
		{"file without block gets the reply's", "# Work\n", "r\n" + block, "# Work\n\nr\n" + block, true},
		{"neither has a block: the file", "# Work\n", "r", "# Work\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, merged := Output(tt.file, tt.reply)
			if got != tt.want || merged != tt.merged {
				t.Fatalf("Output = %q, %v; want %q, %v", got, merged, tt.want, tt.merged)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	if _, err := Check("executor", "no block here"); !errors.Is(err, signal.ErrNoBlock) {
		t.Fatalf("no block: err = %v, want ErrNoBlock", err)
	}
	if _, err := Check("auditor", block); err == nil || !strings.Contains(err.Error(), "Rating") {
		t.Fatalf("auditor without Rating: err = %v, want a Rating error", err)
	}
	sig, err := Check("executor", "text\n"+block)
	if err != nil || sig.Result != signal.Success {
		t.Fatalf("Check = %+v, %v; want SUCCESS", sig, err)
	}
}

func TestReask(t *testing.T) {
	got := Reask(errors.New("no SIGNAL BLOCK"))
	if !strings.Contains(got, "could not be used: no SIGNAL BLOCK") || !strings.Contains(got, "SIGNAL BLOCK exactly") {
		t.Fatalf("Reask = %q", got)
	}
	if got := ReaskJudgement(errors.New(`judgement: not scored: "x"`)); !strings.Contains(got, `not scored: "x"`) || !strings.Contains(got, `{"scores"`) {
		t.Fatalf("ReaskJudgement = %q", got)
	}
}
