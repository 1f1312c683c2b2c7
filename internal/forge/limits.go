package forge

// GitHub's rate limits as the client reads them from its answers: the
// hourly quota, secondary limits and their retry-after, and the wait every
// call makes while one is in force.

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// isPrimary reports whether an answer says the hourly quota is spent.
func isPrimary(h http.Header) bool { return h.Get("X-Ratelimit-Remaining") == "0" }

// limitWait reads a 403 or 429 the way GitHub documents: retry-after
// first, then an exhausted quota's reset time, then a secondary limit's
// doubling minute. A 403 that is none of these is a permission error.
func (c *Client) limitWait(status int, h http.Header, msg string, secondary int) (time.Duration, bool) {
	if d, ok := retryAfter(h, c.now()); ok {
		return d, true
	}
	if isPrimary(h) {
		if reset, err := strconv.ParseInt(h.Get("X-Ratelimit-Reset"), 10, 64); err == nil {
			return max(time.Unix(reset, 0).Sub(c.now()), 0) + time.Second, true
		}
		return secondaryWait, true
	}
	low := strings.ToLower(msg)
	if status == http.StatusTooManyRequests || strings.Contains(low, "secondary rate limit") ||
		strings.Contains(low, "abuse") || strings.Contains(low, "rate limit exceeded") {
		return secondaryWait << min(secondary, 5), true
	}
	return 0, false
}

func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// noteLimits remembers a spent quota from any answer, so the next call
// waits for the reset instead of being refused.
func (c *Client) noteLimits(h http.Header) {
	if !isPrimary(h) {
		return
	}
	reset, err := strconv.ParseInt(h.Get("X-Ratelimit-Reset"), 10, 64)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := time.Unix(reset, 0).Add(time.Second); t.After(c.blockedUntil) {
		c.blockedUntil = t
	}
}

// block holds every call back for d from now.
func (c *Client) block(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.now().Add(d); t.After(c.blockedUntil) {
		c.blockedUntil = t
	}
}

// waitBlocked waits out a rate limit in force, or fails when it is longer
// than the longest wait allowed.
func (c *Client) waitBlocked(ctx context.Context, op string) error {
	c.mu.Lock()
	d := c.blockedUntil.Sub(c.now())
	c.mu.Unlock()
	if d <= 0 {
		return nil
	}
	if d > c.maxWait {
		return &Error{Op: op, Message: "rate limit in force", RetryAfter: d}
	}
	return c.pause(ctx, op, d)
}

func (c *Client) pause(ctx context.Context, op string, d time.Duration) error {
	if err := c.sleep(ctx, d); err != nil {
		return fmt.Errorf("github: %s: %w", op, err)
	}
	return nil
}
