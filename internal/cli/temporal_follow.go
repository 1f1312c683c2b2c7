package cli

import (
	"context"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// itemFollower shows a Temporal run's item events as its journal has them.
// The items' steps run in cadre workers, on this machine or others, whose
// events reach the starter's journal (written by a worker sharing it, or
// applied from a remote worker's batch) and never its event bus. The
// starter's own run-level events (runStarted, warnings, runCompleted) go
// straight to out; item events only from the journal, so none shows twice.
type itemFollower struct {
	st  *store.Store
	out event.Sink

	mu  sync.Mutex
	run string
	seq int64
}

// Handle is the starter's bus sink.
func (f *itemFollower) Handle(ev event.Event) {
	if ev.Run != "" {
		f.mu.Lock()
		if f.run == "" {
			f.run = ev.Run
		}
		f.mu.Unlock()
	}
	if ev.Item != "" {
		return
	}
	if ev.Type == event.RunCompleted {
		// The items' events go before the run's end: every workflow has
		// ended, so the journal has them.
		f.poll(context.Background())
	}
	f.out.Handle(ev)
}

// poll passes on the item events journaled since the last poll.
func (f *itemFollower) poll(ctx context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.run == "" {
		return
	}
	evs, next, err := f.st.Events(ctx, f.run, f.seq)
	if err != nil {
		return
	}
	f.seq = next
	for _, ev := range decodeEvents(evs) {
		if ev.Item != "" {
			f.out.Handle(ev)
		}
	}
}

// follow polls every pollEvery until the returned stop, which polls once
// more: the run's last item events are journaled before its workflows end.
func (f *itemFollower) follow(ctx context.Context) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(pollEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f.poll(ctx)
			}
		}
	}()
	return func() {
		close(done)
		<-ended
		f.poll(context.WithoutCancel(ctx))
	}
}
