package runlock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A live run's lock is refused to another run; a lock whose process is
// gone is taken over with a warning; a run releases only its own lock.
func TestAcquireRefusesALiveLockAndTakesOverAStaleOne(t *testing.T) {
	state := filepath.Join(t.TempDir(), ".cadre")
	var warned []string
	warn := func(s string) { warned = append(warned, s) }
	lk, err := Acquire(state, "a", os.Getpid(), warn)
	if err != nil {
		t.Fatal(err)
	}
	if run, pid, ok := Read(state); !ok || run != "a" || pid != os.Getpid() {
		t.Errorf("Read = %s %d %v", run, pid, ok)
	}
	if _, err := Acquire(state, "b", os.Getpid()+1, warn); !errors.Is(err, ErrLocked) {
		t.Errorf("a live lock was taken: %v", err)
	}
	lk.Release()
	if _, _, ok := Read(state); ok {
		t.Error("released lock still held")
	}

	gone := 1 << 30 // above any pid the kernel gives
	os.WriteFile(filepath.Join(state, "lock"), []byte(`{"run":"old","pid":1073741824}`), 0o644)
	if Alive(gone) {
		t.Skip("the gone pid is alive")
	}
	if _, _, ok := Read(state); ok {
		t.Error("a dead process's lock read as held")
	}
	b, err := Acquire(state, "b", os.Getpid(), warn)
	if err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "stale lock of run old") {
		t.Errorf("warnings %q", warned)
	}
	os.WriteFile(filepath.Join(state, "lock"), []byte(`{"run":"c","pid":1}`), 0o644)
	b.Release()
	if info, err := ReadInfo(state); err != nil || info.Run != "c" {
		t.Errorf("another run's lock released: %+v %v", info, err)
	}
}
