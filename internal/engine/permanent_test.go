package engine

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// A worker whose remote is missing, or that opens an item whose task
// file no longer loads, fails with an error wrapping executor.ErrPermanent, so an
// executor that retries steps fails the item at once; its message is the
// one the embedded engine journals. A journal that fails does not wrap it:
// that may pass.
func TestUncurableStepErrorsArePermanent(t *testing.T) {
	e := newEnv(t, passAll, [2]string{"a", "code"})
	ctx := context.Background()
	_, err := e.eng.StartWith(ctx, Options{}, func(ctx context.Context, run string, it store.Item) error {
		if _, err := e.eng.OpenRun(ctx, run, executor.OpenOptions{Remote: "nope"}); !errors.Is(err, executor.ErrPermanent) || !strings.Contains(err.Error(), `remote "nope"`) {
			t.Errorf("open with a missing remote: %v, want it permanent, naming the remote", err)
		}
		gone, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := e.eng.OpenRun(gone, run, executor.OpenOptions{Remote: "nope"}); err == nil || errors.Is(err, executor.ErrPermanent) {
			t.Errorf("open with the journal unreachable: %v, want an error not permanent", err)
		}
		s, err := openItem(ctx, e.eng, run, it.ID)
		if err != nil {
			return err
		}
		b, err := s.Begin(ctx)
		if err != nil {
			return err
		}
		// The task file goes while the item runs; the next step is on a
		// worker opening the item afresh.
		if err := os.Remove(it.Ref); err != nil {
			return err
		}
		_, lerr := taskfile.Load(it.Ref)
		want := relErr(lerr, e.root)
		s2, err := openItem(ctx, e.eng, run, it.ID)
		if err != nil {
			return err
		}
		st, d := workflow.Next(e.eng.pipelineLimits(), workflow.Initial(it.ID, b.Stage, b.Attempts), workflow.Event{Kind: workflow.Start})
		_, err = s2.Stage(ctx, st, d)
		if !errors.Is(err, executor.ErrPermanent) || err.Error() != want {
			t.Errorf("stage without its task file: %v, want %q, permanent", err, want)
		}
		_, err = e.eng.FailStart(ctx, run, it.ID, want)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Every refusal of a remote is permanent, unless git was cut short.
func TestCheckRemotePermanent(t *testing.T) {
	e := newEnv(t, passAll)
	ctx := context.Background()
	gone, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		opts      Options
		remote    string
		permanent bool
	}{
		{"in place", ctx, Options{InPlace: true}, "origin", true},
		{"an option", ctx, Options{}, "-x", true},
		{"missing", ctx, Options{}, "origin", true},
		{"cut short", gone, Options{}, "origin", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := e.eng.checkRemote(tc.ctx, tc.opts, tc.remote)
			if err == nil || errors.Is(err, executor.ErrPermanent) != tc.permanent {
				t.Errorf("checkRemote: %v, want permanent %v", err, tc.permanent)
			}
		})
	}
}
