package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// The log follower shows a step as --plain does, from the runner's
// progress (messages, tool calls with their targets), not the CLI's raw
// stream JSON; a step without progress shows its log.
func TestStepTranscript(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.CreateRun(ctx, store.Run{ID: "r"}, store.Item{RunID: "r", ID: "7"})
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.Local)
	for i, note := range []string{"session started (claude-x)", "Edit /w/args.go", "says: done"} {
		data, _ := json.Marshal(event.Event{Time: at.Add(time.Duration(i) * time.Second), Run: "r", Item: "7", Step: "7/code/coder#1", Type: event.StepProgress, Message: note})
		st.AppendEvent(ctx, store.Event{RunID: "r", Time: at, Type: event.StepProgress, ItemID: "7", Data: data})
	}
	raw := `{"type":"assistant","message":{"content":[{"id":"toolu_1"}]}}`
	for _, step := range []string{"7/code/coder#1", "7/audit/auditor#1"} {
		p := engine.StepLogPath(dir, "r", "7", step)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(raw+"\n"), 0o644)
	}
	var tr transcript
	got, err := tr.read(st, dir, "r", "7", "7/code/coder#1")
	if err != nil {
		t.Fatal(err)
	}
	want := "12:00:00  session started (claude-x)\n12:00:01  Edit /w/args.go\n12:00:02  says: done\n"
	if got != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", got, want)
	}
	if strings.Contains(got, "toolu_") {
		t.Error("the transcript shows the raw stream")
	}
	// Read again after one more event: only it is read, and its line
	// joins the others.
	first := tr.seq
	if first == 0 {
		t.Fatal("the first read kept no place in the journal")
	}
	data, _ := json.Marshal(event.Event{Time: at.Add(3 * time.Second), Run: "r", Item: "7", Step: "7/code/coder#1", Type: event.StepProgress, Message: "Bash go test"})
	st.AppendEvent(ctx, store.Event{RunID: "r", Time: at, Type: event.StepProgress, ItemID: "7", Data: data})
	if got, _ := tr.read(st, dir, "r", "7", "7/code/coder#1"); got != want+"12:00:03  Bash go test\n" {
		t.Errorf("transcript after one more event:\n%s", got)
	}
	if tr.seq != first+1 {
		t.Errorf("the second read ended at event %d, want %d: one event past the first read's %d", tr.seq, first+1, first)
	}
	if got, err := tr.read(st, dir, "r", "7", "7/audit/auditor#1"); err != nil || !strings.Contains(got, "toolu_1") {
		t.Errorf("a step without progress: %q, %v; want its log", got, err)
	}
	// Back to the first step: read whole again, not only what came since.
	if got, _ := tr.read(st, dir, "r", "7", "7/code/coder#1"); !strings.HasPrefix(got, want) {
		t.Errorf("the first step again:\n%s", got)
	}
}
