package cli

import "testing"

// With --listen, a pass that acted is followed by another at once, as is
// one where something failed, but a failure only once in a row; without
// --listen, the clock alone makes passes.
func TestWatchFollowUp(t *testing.T) {
	listening := &watcher{hooks: &listener{}}
	for i, step := range []struct {
		t    watchTally
		want bool
	}{
		{watchTally{acted: 1}, true},
		{watchTally{acted: 2}, true},
		{watchTally{}, false},
		{watchTally{failed: 1}, true},  // a failed round: its pause next
		{watchTally{failed: 1}, false}, // failing again: not again at once
		{watchTally{failed: 1}, true},  // a later pass's failure: once more
		{watchTally{failed: 1, acted: 1}, true},
		{watchTally{failed: 1}, true}, // after a pass that acted
		{watchTally{waiting: 1}, false},
	} {
		if got := listening.followUp(step.t); got != step.want {
			t.Errorf("pass %d %+v: followUp = %v, want %v", i, step.t, got, step.want)
		}
	}
	polling := &watcher{}
	if polling.followUp(watchTally{acted: 1, failed: 1}) {
		t.Error("a polling watch followed a pass up")
	}
}
