package runner

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

type nop struct{ name string }

func (n nop) Name() string                                  { return n.name }
func (nop) Capabilities() Caps                              { return Caps{} }
func (nop) Run(context.Context, Invocation) (Result, error) { return Result{}, nil }

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	r.Register("b", func(s Settings) (Runner, error) { return nop{s.Name}, nil })
	r.Register("a", func(s Settings) (Runner, error) { return nop{s.Name}, nil })
	if got := r.Types(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("Types = %v", got)
	}
	run, err := r.New("a", Settings{Name: "mine"})
	if err != nil || run.Name() != "mine" {
		t.Fatalf("New = %v, %v", run, err)
	}
	if _, err := r.New("zzz", Settings{}); !errors.Is(err, ErrUnknown) {
		t.Fatalf("unknown type error = %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("duplicate Register did not panic")
		}
	}()
	r.Register("a", nil)
}

func TestErrorKind(t *testing.T) {
	err := fmt.Errorf("step: %w", &Error{Kind: KindRateLimit, Runner: "claude", RetryAfter: 3 * time.Second, Msg: "429"})
	if KindOf(err) != KindRateLimit {
		t.Errorf("KindOf = %q", KindOf(err))
	}
	if got := err.Error(); got != "step: runner claude: rate-limit: 429 (retry after 3s)" {
		t.Errorf("message %q", got)
	}
	if KindOf(errors.New("plain")) != "" {
		t.Error("plain error classified")
	}
}
