package temporal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// A worker whose heartbeats stop reaching Temporal in time (killed, cut
// off, or too loaded to send them) loses its step: after the heartbeat
// timeout Temporal gives the step to another worker. A live loser hears
// of it only in the answer to a later heartbeat, if one comes; a step
// that ended in between would land its effects (its journal record, a
// commit) beside the new attempt's, and a paid agent step would run to
// its end twice. So an activity holds its step on a lease: from the
// start of its attempt until a heartbeat timeout after the last
// heartbeat Temporal accepted (counted from when it was sent, which is
// before Temporal counts it). The step's context is cancelled the moment
// the lease runs out or a heartbeat is refused, killing its agent; and
// it says so whenever it is asked, not only when a timer gets to run on a
// loaded machine: the engine asks it as the agent exits, and the journal
// as each write begins and commits, so a late finisher lands nothing.

// errLapsed is the cause of a step cancelled because its lease ran out.
var errLapsed = errors.New("no heartbeat reached Temporal within the heartbeat timeout: the step may have gone to another worker")

// lease is the step's context: the activity's, cancelled (with a cause)
// when the attempt no longer holds the step.
type lease struct {
	context.Context
	lose    context.CancelCauseFunc
	timeout time.Duration // the heartbeat timeout; 0: the lease never runs out
	until   atomic.Int64  // when it runs out, in Unix nanoseconds
	timer   *time.Timer
}

// newLease starts the lease of the activity's attempt. Its clock starts
// when Temporal started the attempt, unless that reads as later than now
// or a whole timeout ago (this machine's clock is not Temporal's): then
// it starts now.
func newLease(ctx context.Context, timeout time.Duration) *lease {
	inner, lose := context.WithCancelCause(ctx)
	l := &lease{Context: inner, lose: lose, timeout: timeout}
	if timeout <= 0 {
		l.until.Store(math.MaxInt64)
		return l
	}
	start := time.Now()
	if activity.IsActivity(ctx) {
		if st := activity.GetInfo(ctx).StartedTime; !st.IsZero() && !st.After(start) && start.Sub(st) < timeout {
			start = st
		}
	}
	until := start.Add(timeout)
	l.until.Store(until.UnixNano())
	l.timer = time.AfterFunc(time.Until(until), l.check)
	return l
}

// Done checks the lease first, so a select on it sees a lapsed lease.
func (l *lease) Done() <-chan struct{} {
	l.check()
	return l.Context.Done()
}

// Err checks the lease first, so a lapsed lease reads as cancelled.
func (l *lease) Err() error {
	l.check()
	return l.Context.Err()
}

// check cancels the step when its lease ran out.
func (l *lease) check() {
	if time.Now().UnixNano() >= l.until.Load() {
		l.lose(errLapsed)
	}
}

// renew extends the lease to a timeout after sent, when Temporal
// accepted the heartbeat sent then. A lease that already ran out stays
// lost: the step may be another worker's by now.
func (l *lease) renew(sent time.Time) {
	if l.timeout <= 0 || l.Context.Err() != nil {
		return
	}
	until := sent.Add(l.timeout).UnixNano()
	for {
		old := l.until.Load()
		if until <= old || time.Now().UnixNano() >= old {
			break
		}
		if l.until.CompareAndSwap(old, until) {
			l.timer.Reset(time.Until(time.Unix(0, until)))
			break
		}
	}
	l.check()
}

// end releases the lease's timer and context.
func (l *lease) end() {
	if l.timer != nil {
		l.timer.Stop()
	}
	l.lose(context.Canceled)
}

// refused says whether err is Temporal's refusal of a heartbeat: it no
// longer knows this attempt of the activity (it timed out, was handed to
// another worker, or its workflow is gone).
func refused(err error) bool {
	var nf *serviceerror.NotFound
	var na *serviceerror.NamespaceNotActive
	var nn *serviceerror.NamespaceNotFound
	return errors.As(err, &nf) || errors.As(err, &na) || errors.As(err, &nn)
}

// cancelling says whether err is Temporal asking the activity to stop
// (its workflow cancelled it, a person paused or reset it): the SDK must
// hear it itself, so the activity ends as cancelled, not failed.
func cancelling(err error) bool {
	return temporal.IsCanceledError(err) || errors.Is(err, activity.ErrActivityPaused) || errors.Is(err, activity.ErrActivityReset)
}

// lostErr is the error of a step whose lease was lost, saying why.
func lostErr(l *lease, what string) error {
	cause := context.Cause(l.Context)
	if errors.Is(cause, errLapsed) || refused(cause) {
		return fmt.Errorf("%s stopped on this worker: %w", what, cause)
	}
	return nil
}
