package forge

// OnWait makes c tell f what a caller is about to wait for ("item KEY",
// "write KEY", "queue"), so tests see queueing as an event, not a delay.
func OnWait(c *Client, f func(what string)) { c.onWait = f }
