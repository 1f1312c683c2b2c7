package temporal

import (
	"testing"
	"time"
)

// A step heartbeats every 2s, or three times per heartbeat timeout when
// that is shorter, so a short timeout does not move live steps away.
func TestHeartbeatInterval(t *testing.T) {
	for _, c := range []struct{ timeout, want time.Duration }{
		{0, heartbeatEvery},
		{DefaultHeartbeat, heartbeatEvery},
		{6 * time.Second, heartbeatEvery},
		{3 * time.Second, time.Second},
		{time.Second, time.Second / 3},
	} {
		if got := heartbeatInterval(c.timeout); got != c.want {
			t.Errorf("heartbeatInterval(%s) = %s, want %s", c.timeout, got, c.want)
		}
	}
}
