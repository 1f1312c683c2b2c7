package jira

import (
	"context"
	"time"
)

// SetSleep replaces how c waits between attempts, so a test sees the
// waits a rate limit asks for without spending them.
func SetSleep(c *Client, sleep func(ctx context.Context, d time.Duration) error) { c.sleep = sleep }
