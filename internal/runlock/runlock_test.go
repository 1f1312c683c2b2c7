package runlock

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A live run's lock is refused to another run; a lock whose process is
// gone is taken over with a warning; a run releases only its own lock.
func TestAcquireRefusesALiveLockAndTakesOverAStaleOne(t *testing.T) {
	path := File(filepath.Join(t.TempDir(), ".git"))
	var warned []string
	warn := func(s string) { warned = append(warned, s) }
	lk, err := Acquire(path, Info{Run: "a", PID: os.Getpid(), State: "/repo/.cadre"}, warn)
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := Holder(path); !ok || h.Run != "a" || h.PID != os.Getpid() || h.State != "/repo/.cadre" {
		t.Errorf("Holder = %+v %v", h, ok)
	}
	if _, err := Acquire(path, Info{Run: "b", PID: os.Getpid() + 1, State: "/repo/.cadre"}, warn); !errors.Is(err, ErrLocked) {
		t.Errorf("a live lock was taken: %v", err)
	}
	lk.Release()
	if _, ok := Holder(path); ok {
		t.Error("released lock still held")
	}

	gone := 1 << 30 // above any pid the kernel gives
	os.WriteFile(path, []byte(`{"run":"old","pid":1073741824}`), 0o644)
	if Alive(gone) {
		t.Skip("the gone pid is alive")
	}
	if _, ok := Holder(path); ok {
		t.Error("a dead process's lock read as held")
	}
	b, err := Acquire(path, Info{Run: "b", PID: os.Getpid()}, warn)
	if err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "stale lock of run old") {
		t.Errorf("warnings %q", warned)
	}
	os.WriteFile(path, []byte(`{"run":"c","pid":1}`), 0o644)
	b.Release()
	if info, err := Stored(path); err != nil || info.Run != "c" {
		t.Errorf("another run's lock released: %+v %v", info, err)
	}
}

// A run started from another checkout of the repository is refused with
// where that run works, since it is stopped from there.
func TestAcquireNamesTheCheckoutOfTheHolder(t *testing.T) {
	path := File(t.TempDir())
	lk, err := Acquire(path, Info{Run: "a", PID: os.Getpid(), State: "/main/.cadre"}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	_, err = Acquire(path, Info{Run: "b", PID: os.Getpid() + 1, State: "/linked/.cadre"}, func(string) {})
	want := "another cadre run is active: run a (pid " + strconv.Itoa(os.Getpid()) + ") of the checkout /main holds " + path + "; wait for it or run cadre stop a there"
	if !errors.Is(err, ErrLocked) || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// A run killed under a parent that does not reap it leaves a zombie with
// its pid: its lock is stale, not a live run's, or the repository would
// stay held until the zombie's parent ends.
func TestAZombiesLockIsStale(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start a process: ", err)
	}
	pid := cmd.Process.Pid
	defer cmd.Wait() // reaped once the test is done
	for deadline := time.Now().Add(10 * time.Second); !zombie(pid); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat("/proc/self/stat"); err != nil {
			t.Skip("no /proc here: ", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not exit", pid)
		}
	}
	if Alive(pid) {
		t.Fatalf("Alive(%d) = true for a zombie", pid)
	}
	path := File(t.TempDir())
	if _, err := Acquire(path, Info{Run: "killed", PID: pid}, func(string) {}); err != nil {
		t.Fatal(err)
	}
	var warned []string
	lk, err := Acquire(path, Info{Run: "next", PID: os.Getpid()}, func(s string) { warned = append(warned, s) })
	if err != nil {
		t.Fatalf("the zombie's lock was not taken over: %v", err)
	}
	defer lk.Release()
	if len(warned) != 1 {
		t.Errorf("warnings %q, want one about the stale lock", warned)
	}
	if !Alive(os.Getpid()) {
		t.Error("Alive is false for this very process")
	}
}

// A process holding the repository for its own runs (cadre watch) lends
// the lock to a run it starts, which names it, and gets it back when the
// run releases it; another process is refused meanwhile.
func TestLockLentToOwnRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.lock")
	watch, err := Acquire(path, Info{Run: "watch", PID: os.Getpid(), Lends: true}, func(string) { t.Error("no warning wanted") })
	if err != nil {
		t.Fatal(err)
	}
	run, err := Acquire(path, Info{Run: "r1", PID: os.Getpid()}, func(string) { t.Error("no warning wanted") })
	if err != nil {
		t.Fatalf("the watch's own run: %v", err)
	}
	if h, ok := Holder(path); !ok || h.Run != "r1" || h.Lender != "watch" {
		t.Fatalf("holder %+v, want r1 lent the lock by the watch", h)
	}
	if _, err := Acquire(path, Info{Run: "other", PID: os.Getppid()}, func(string) {}); err == nil {
		t.Fatal("another process took the lent lock")
	}
	run.Release()
	if h, ok := Holder(path); !ok || h.Run != "watch" || !h.Lends {
		t.Fatalf("holder after the run %+v, want the watch back", h)
	}
	watch.Release()
	if _, ok := Holder(path); ok {
		t.Fatal("lock kept after the watch released it")
	}
	// Not lent: the same process's second holder takes it over as before.
	a, _ := Acquire(path, Info{Run: "a", PID: os.Getpid()}, func(string) {})
	warned := false
	b, err := Acquire(path, Info{Run: "b", PID: os.Getpid()}, func(string) { warned = true })
	if err != nil || !warned {
		t.Fatalf("takeover of an unlent lock: %v, warned %v", err, warned)
	}
	b.Release()
	a.Release()
}

// A lock whose pid was given to another process since (the same pid, a
// different process) does not hold: it is taken over, saying why. The
// process that took it still holds it.
func TestLockNotFooledByReusedPID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cadre.lock")
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	pid := sleeper.Process.Pid
	stamp := ProcStamp(pid)
	if stamp == "" {
		t.Skip("/proc does not say when a process started here")
	}
	write := func(proc string) {
		data, _ := json.Marshal(Info{Run: "old", PID: pid, Proc: proc})
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var warned []string
	warn := func(m string) { warned = append(warned, m) }

	write(stamp) // the very process that took it
	if _, err := Acquire(path, Info{Run: "new", PID: os.Getpid()}, warn); !errors.Is(err, ErrLocked) {
		t.Fatalf("a live holder's lock was taken: %v", err)
	}
	write("") // an older lock that does not say: the pid is trusted
	if _, err := Acquire(path, Info{Run: "new", PID: os.Getpid()}, warn); !errors.Is(err, ErrLocked) {
		t.Fatalf("a lock without a stamp, of a live pid, was taken: %v", err)
	}
	write(strings.Split(stamp, ":")[0] + ":1") // the pid, a process started long before
	l, err := Acquire(path, Info{Run: "new", PID: os.Getpid()}, warn)
	if err != nil {
		t.Fatalf("a lock naming a reused pid blocks: %v", err)
	}
	defer l.Release()
	if len(warned) != 1 || !strings.Contains(warned[0], "another process now") {
		t.Errorf("warnings %q, want the takeover explained", warned)
	}
	if h, ok := Holder(path); !ok || h.Run != "new" || h.Proc != ProcStamp(os.Getpid()) {
		t.Errorf("holder %+v, %v; want the new run, stamped", h, ok)
	}
}
