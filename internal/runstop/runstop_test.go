package runstop

import (
	"testing"
)

// TestStopAndHalt: a stop request and a halt are seen until withdrawn and
// lifted, the halt with its reason; withdrawing or lifting what is not
// there is no error.
func TestStopAndHalt(t *testing.T) {
	dir := t.TempDir()
	if Requested(dir, "r1") || Halted(dir, "r1") || HaltReason(dir, "r1") != "" {
		t.Fatal("a new run is stopped or halted")
	}
	if err := Request(dir, "r1"); err != nil {
		t.Fatal(err)
	}
	if err := Halt(dir, "r1", "a: audit rated 3/10"); err != nil {
		t.Fatal(err)
	}
	if !Requested(dir, "r1") || !Halted(dir, "r1") || HaltReason(dir, "r1") != "a: audit rated 3/10" {
		t.Errorf("requested %v, halted %v (%q); want both, with the reason", Requested(dir, "r1"), Halted(dir, "r1"), HaltReason(dir, "r1"))
	}
	if Requested(dir, "r2") || Halted(dir, "r2") {
		t.Error("another run is stopped or halted")
	}
	for i := 0; i < 2; i++ {
		if err := Withdraw(dir, "r1"); err != nil {
			t.Fatal(err)
		}
		if err := Lift(dir, "r1"); err != nil {
			t.Fatal(err)
		}
	}
	if Requested(dir, "r1") || Halted(dir, "r1") {
		t.Error("the stop or the halt outlived Withdraw and Lift")
	}
}

// A wake is taken once: the pass it asks for is made once.
func TestWakeTakenOnce(t *testing.T) {
	dir := t.TempDir()
	if TakeWake(dir, "watch") {
		t.Fatal("a wake taken before any was asked")
	}
	if err := Wake(dir, "watch"); err != nil {
		t.Fatal(err)
	}
	if !TakeWake(dir, "watch") || TakeWake(dir, "watch") {
		t.Error("a wake asked once was not taken exactly once")
	}
}
