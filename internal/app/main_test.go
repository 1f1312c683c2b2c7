package app_test

import (
	"os"
	"testing"

	"github.com/cadre-dev/cadre/internal/sandbox"
)

// TestMain lets this test binary be the sandbox's network bridge, as the
// cadre binary is in use: an engine these tests build confines an
// untrusted item's project commands under model-only, whose bridge is the
// running executable. Without it the binary would run its own tests there.
func TestMain(m *testing.M) {
	sandbox.BridgeIfAsked()
	os.Exit(m.Run())
}
