package taskfile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestBoardCoalescesAndFlushes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.md")
	os.WriteFile(path, []byte("---\nstage: plan\nkeep: me\n---\n# T\n"), 0o644)
	b := NewBoard(path, false)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.Set([]Field{{Key: "stage", Value: "code"}, {Key: "attempts", Value: i}})
		}()
	}
	wg.Wait()
	b.Set([]Field{{Key: "stage", Value: "audit"}, {Key: "attempts", Value: 7}})
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	tk, err := Load(path)
	if err != nil || tk.Stage != "audit" || tk.Attempts != 7 {
		t.Fatalf("after flush: %+v %v", tk, err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "keep: me") || !strings.HasSuffix(string(data), "# T\n") {
		t.Errorf("file %q", data)
	}
	b.Set([]Field{{Key: "stage", Value: "completed"}})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if tk, _ := Load(path); tk.Stage != "completed" {
		t.Errorf("close did not flush: %s", tk.Stage)
	}
}

func TestBoardReportsWriteErrors(t *testing.T) {
	b := NewBoard(filepath.Join(t.TempDir(), "missing.md"), false)
	b.Set([]Field{{Key: "stage", Value: "code"}})
	if err := b.Close(); err == nil {
		t.Error("a failed write was not reported")
	}
}

func TestBoardRemovesStaleTempFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.md")
	os.WriteFile(path, []byte("---\nstage: code\n---\n"), 0o644)
	// The temp file of a process that is gone: one that just ended (a
	// fixed pid may be a live process's on a busy machine).
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, fmt.Sprintf(".t.md.%d.tmp", gone.Process.Pid))
	os.WriteFile(stale, []byte("half"), 0o644)
	other := filepath.Join(dir, ".u.md.1.tmp")
	os.WriteFile(other, []byte("not ours"), 0o644)
	b := NewBoard(path, false)
	defer b.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("stale temp file left")
	}
	if _, err := os.Stat(other); err != nil {
		t.Error("another file's temp file removed")
	}
}

// A temp file of this process is another board's of the same file, which
// may be about to rename it (an executor opens an item for each step): a
// new board leaves it alone.
func TestBoardKeepsThisProcesssTempFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.md")
	os.WriteFile(path, []byte("---\nstage: code\n---\n"), 0o644)
	mine := filepath.Join(dir, ".t.md."+strconv.Itoa(os.Getpid())+".42.tmp")
	os.WriteFile(mine, []byte("being written"), 0o644)
	b := NewBoard(path, false)
	defer b.Close()
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("this process's temp file removed: %v", err)
	}
}

// While an agent runs, the board leaves the file to it: a queued field waits
// for the agent to end (or for an explicit flush), and the file is current
// when the agent starts.
func TestBoardHoldsWritesWhileAnAgentRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.md")
	os.WriteFile(path, []byte("---\nstage: plan\n---\n# T\n"), 0o644)
	b := NewBoard(path, false)
	b.Set([]Field{{Key: "stage", Value: "code"}})
	if err := b.BeginAgent(); err != nil {
		t.Fatal(err)
	}
	if tk, _ := Load(path); tk.Stage != "code" {
		t.Fatalf("agent started with stage %s", tk.Stage)
	}
	b.Set([]Field{{Key: "agent", Value: "coder"}})
	data, _ := os.ReadFile(path)
	os.WriteFile(path, append(data, "agent's line\n"...), 0o644)
	b.mu.Lock()
	pending := len(b.order)
	b.mu.Unlock()
	if pending != 1 {
		t.Errorf("pending fields while the agent runs = %d, want 1", pending)
	}
	b.EndAgent()
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(path)
	if tk, _ := Load(path); tk.Agent != "coder" || !strings.Contains(string(data), "agent's line") {
		t.Errorf("after the agent: %q", data)
	}
	b.Close()
}

// A lazy board (a file no agent reads) lets a burst of changes gather,
// even while agents run, and writes them together; flush and close write
// at once.
func TestLazyBoardGathersChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.md")
	os.WriteFile(path, []byte("---\nstage: plan\n---\n# T\n"), 0o644)
	before, _ := os.Stat(path)
	b := NewBoard(path, true)
	b.mu.Lock()
	b.delay = time.Hour // nothing is written before a flush
	b.mu.Unlock()
	for _, role := range []string{"analyst", "scout", "planner", "coder"} {
		if err := b.BeginAgent(); err != nil {
			t.Fatal(err)
		}
		b.Set([]Field{{Key: "agent", Value: role}, {Key: "stage", Value: "code"}})
		b.EndAgent()
	}
	if now, _ := os.Stat(path); !os.SameFile(before, now) {
		t.Fatal("a lazy board wrote before its delay or a flush")
	}
	if err := b.Flush(); err != nil {
		t.Fatal(err)
	}
	if tk, _ := Load(path); tk.Agent != "coder" || tk.Stage != "code" {
		t.Errorf("after flush: agent %s stage %s", tk.Agent, tk.Stage)
	}
	b.mu.Lock()
	b.delay = 0 // then it writes as soon as it can
	b.mu.Unlock()
	b.Set([]Field{{Key: "stage", Value: "completed"}})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if tk, _ := Load(path); tk.Stage != "completed" {
		t.Errorf("close did not flush: %s", tk.Stage)
	}
}
