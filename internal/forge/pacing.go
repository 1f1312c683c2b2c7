package forge

import (
	"context"
	"fmt"
	"github.com/cadre-dev/cadre/internal/keylock"
	"net/http"
	"strconv"
	"time"
)

// How mutating requests are paced.
//
// GitHub asks clients that make many writes to space them (about a second)
// and to send them one at a time, because its secondary limits (content
// created per minute, concurrent requests) are not reported in advance.
// Spacing every write of a whole fleet through one queue makes the queue
// the bottleneck of a large run, though, so the Client paces only when it
// has a reason to:
//
//   - the budget is unknown (no answer has reported x-ratelimit-remaining
//     yet) or low (below lowBudget of x-ratelimit-limit);
//   - a secondary limit (a 403 or 429 that is not a spent quota) was met
//     less than calmDown ago.
//
// Otherwise writes for different resources go concurrently. Writes to the
// same resource (an issue or pull request number, a head branch) are never
// in flight together, paced or not: GitHub may apply them in any order, and
// the look-up-then-write of EnsurePR and EnsureComment would race.
const (
	// lowBudgetShare is the share of the hourly limit under which
	// writes are paced: a tenth leaves room for the reads of a run.
	lowBudgetShare = 10
	// lowBudgetFloor is the least budget counted as ample, for small
	// limits (a GITHUB_TOKEN in Actions gets 1,000 an hour).
	lowBudgetFloor = 100
	// calmDown is how long writes stay paced after a secondary limit,
	// counted from the end of the wait it asked for.
	calmDown = 10 * time.Minute
)

// WithWriteGap spaces mutating requests at least d apart and sends them one
// at a time while the Client paces (see pacing.go): the rate-limit budget
// is unknown or low, or a secondary limit was met lately. With ample budget
// writes for different resources go concurrently. Zero, the default,
// never paces; rate-limit answers are obeyed all the same.
func WithWriteGap(d time.Duration) Option { return func(c *Client) { c.writeGap = max(d, 0) } }

// budget is what the last answer said of the rate-limit quota.
type budget struct {
	known            bool
	remaining, limit int
}

// ample reports whether b leaves room for concurrent writes.
func (b budget) ample() bool {
	return b.known && b.remaining >= max(b.limit/lowBudgetShare, lowBudgetFloor)
}

// noteBudget remembers the quota an answer reports; answers without the
// headers (a proxy, an old Enterprise server) leave it as it was.
func (c *Client) noteBudget(h http.Header) {
	remaining, err := strconv.Atoi(h.Get("X-Ratelimit-Remaining"))
	if err != nil {
		return
	}
	limit, err := strconv.Atoi(h.Get("X-Ratelimit-Limit"))
	if err != nil {
		limit = 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget = budget{known: true, remaining: remaining, limit: limit}
}

// calm paces writes from now until calmDown after wait ends.
func (c *Client) calm(wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.now().Add(wait + calmDown); t.After(c.calmUntil) {
		c.calmUntil = t
	}
}

// paced reports whether the next write goes through the queue.
func (c *Client) paced() bool {
	if c.writeGap <= 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now().Before(c.calmUntil) || !c.budget.ample()
}

// enterQueue takes the place of the one paced write in flight: GitHub
// asks for paced writes to be serial, not merely spaced.
func (c *Client) enterQueue(ctx context.Context, op string) (release func(), err error) {
	select {
	case c.queue <- struct{}{}:
	default:
		if c.onWait != nil {
			c.onWait("queue")
		}
		select {
		case c.queue <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("github: %s: %w", op, ctx.Err())
		}
	}
	return func() { <-c.queue }, nil
}

// spaceWrite waits until writeGap has passed since the last write began.
func (c *Client) spaceWrite(ctx context.Context, op string) error {
	c.mu.Lock()
	d := c.lastWrite.Add(c.writeGap).Sub(c.now())
	c.mu.Unlock()
	if d <= 0 {
		return nil
	}
	return c.pause(ctx, op, d)
}

// markWrite notes that a write begins now, so pacing, once it starts,
// spaces the next one from it.
func (c *Client) markWrite() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastWrite = c.now()
}

// lockWrite holds key (one resource) for the whole of one mutating call,
// its retries included.
func (c *Client) lockWrite(ctx context.Context, op, key string) (unlock func(), err error) {
	return c.hold(ctx, &c.writes, "write ", op, key)
}

// lockItem holds key for a look-up-then-write (EnsurePR, EnsureComment),
// so two callers for the same item cannot both find nothing and both
// write.
func (c *Client) lockItem(ctx context.Context, op, key string) (unlock func(), err error) {
	return c.hold(ctx, &c.items, "item ", op, key)
}

// hold locks key in k, telling onWait (as what+key) when it must wait.
func (c *Client) hold(ctx context.Context, k *keylock.Set, what, op, key string) (unlock func(), err error) {
	var hook func(string)
	if c.onWait != nil {
		hook = func(key string) { c.onWait(what + key) }
	}
	unlock, err = k.Lock(ctx, key, hook)
	if err != nil {
		return nil, fmt.Errorf("github: %s: %w", op, err)
	}
	return unlock, nil
}

// issueKey names an issue or pull request (they share numbers) as a
// resource; branchKey names a head branch.
func issueKey(owner, repo string, n int) string { return fmt.Sprintf("%s/%s#%d", owner, repo, n) }

func branchKey(owner, repo, head string) string {
	return owner + "/" + repo + "@" + headLabel(owner, head)
}
