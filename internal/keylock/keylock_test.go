package keylock

import (
	"context"
	"testing"
)

// One holder per key: a second waits (and says so) until the first
// unlocks, another key does not wait, a waiter whose context ends gives
// up, and a key no one holds is forgotten.
func TestLock(t *testing.T) {
	var s Set
	ctx := context.Background()
	unlock, err := s.Lock(ctx, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.Lock(ctx, "b", func(string) { t.Error("another key waited") })
	if err != nil {
		t.Fatal(err)
	}
	other()
	waited := make(chan string, 1)
	got := make(chan func(), 1)
	go func() {
		u, _ := s.Lock(ctx, "a", func(k string) { waited <- k })
		got <- u
	}()
	if k := <-waited; k != "a" {
		t.Fatalf("waiting for %q", k)
	}
	select {
	case <-got:
		t.Fatal("a second holder of a")
	default:
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Lock(cancelled, "a", nil); err == nil {
		t.Error("a waiter whose context ended got the lock")
	}
	unlock()
	(<-got)()
	if n := len(s.locks); n != 0 {
		t.Errorf("%d keys kept after all unlocked", n)
	}
}
