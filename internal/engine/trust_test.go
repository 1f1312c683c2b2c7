package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/store"
)

// An agent that edits its own task file's body keeps its edit, and sees the
// frontmatter cadre has decided for the step it runs, in every run.
func TestAgentEditsToItsTaskFileAreNeverLost(t *testing.T) {
	const runs = 50
	lost, stale := 0, []string{}
	for i := range runs {
		var mu sync.Mutex
		do := func(inv runner.Invocation) runner.Result {
			path := filepath.Join(inv.Dir, "tasks", inv.Item+".md")
			tk, err := taskfile.Load(path)
			mu.Lock()
			switch {
			case err != nil:
				stale = append(stale, err.Error())
			case inv.Role == "coder" && (tk.Stage != "code" || tk.Agent != "coder"):
				stale = append(stale, fmt.Sprintf("run %d: coder saw stage %s agent %s", i, tk.Stage, tk.Agent))
			case inv.Role == "auditor" && (tk.Stage != "audit" || tk.Agent != "auditor"):
				stale = append(stale, fmt.Sprintf("run %d: auditor saw stage %s agent %s", i, tk.Stage, tk.Agent))
			}
			mu.Unlock()
			if inv.Role == "coder" {
				// Edit the body the way an editor does: read, change, write.
				data, _ := os.ReadFile(path)
				os.WriteFile(path, append(data, []byte("\nNote from the coder.\n")...), 0o644)
			}
			return passAll(inv)
		}
		e := newEnv(t, do, [2]string{"a", "code"})
		sum, err := e.eng.Start(context.Background(), Options{InPlace: true})
		if err != nil || sum.Status != store.RunCompleted {
			t.Fatalf("run %d: %v %+v", i, err, sum)
		}
		raw, _ := os.ReadFile(filepath.Join(e.root, "tasks", "a.md"))
		if !strings.Contains(string(raw), "Note from the coder.") {
			lost++
		}
		if tk := e.task("a"); tk.Stage != "completed" {
			t.Fatalf("run %d: stage %s", i, tk.Stage)
		}
	}
	if lost > 0 {
		t.Errorf("the coder's edit was lost in %d of %d runs", lost, runs)
	}
	if len(stale) > 0 {
		t.Errorf("agents saw stale frontmatter %d times, e.g. %s", len(stale), stale[0])
	}
}
