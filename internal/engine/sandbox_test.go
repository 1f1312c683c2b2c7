package engine

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/store"
)

// An item's agents get the network and build caches of its trust: trusted
// items the run's network and the repository's build caches, untrusted
// ones the untrusted network and build caches of their own, which no
// other item's agents write.
func TestItemSandboxFollowsTrust(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		t.Run(map[bool]string{true: "trusted", false: "untrusted"}[trusted], func(t *testing.T) {
			var mu sync.Mutex
			got := map[string]map[[2]string]bool{} // item → {network, build cache}
			e := newEnv(t, func(inv runner.Invocation) runner.Result {
				mu.Lock()
				if got[inv.Item] == nil {
					got[inv.Item] = map[[2]string]bool{}
				}
				if inv.Sandbox != nil {
					got[inv.Item][[2]string{inv.Sandbox.Network, inv.Sandbox.BuildCache}] = true
				}
				mu.Unlock()
				return passAll(inv)
			}, [2]string{"a", "code"}, [2]string{"b", "code"})
			e.eng.d.Config.Sandbox.TrustRepo = &trusted
			e.eng.d.Sandbox = &sandbox.Policy{Network: sandbox.NetAllow, Untrusted: sandbox.NetModelOnly}
			sum, err := e.eng.Start(context.Background(), Options{InPlace: true})
			if err != nil || sum.Status != store.RunCompleted {
				t.Fatalf("%v %s %s", err, sum.Status, sum.Reason)
			}
			state := filepath.Join(e.root, ".cadre")
			for _, item := range []string{"a", "b"} {
				want := [2]string{sandbox.NetAllow, filepath.Join(state, "cache", "repo")}
				if !trusted {
					want = [2]string{sandbox.NetModelOnly, filepath.Join(state, "cache", "items", sum.Run, item)}
				}
				if len(got[item]) != 1 || !got[item][want] {
					t.Errorf("item %s's steps ran with (network, build cache) %v, want only %v", item, got[item], want)
				}
			}
		})
	}
}
