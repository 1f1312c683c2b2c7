package run_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/run"
)

// Resume refuses an option only Start can apply, before touching the
// repository, rather than ignoring it.
func TestResumeRefusesStartOptions(t *testing.T) {
	_, err := run.Resume(context.Background(), t.TempDir(), "", run.Options{Workflow: "full"})
	if err == nil || !strings.Contains(err.Error(), "Options.Workflow applies only to Start") {
		t.Fatalf("Resume with a workflow: err = %v, want Options.Workflow refused", err)
	}
}
