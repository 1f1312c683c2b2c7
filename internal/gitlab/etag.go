package gitlab

import "fmt"

// Answers is what the Client keeps for conditional requests, as JSON, most
// recently used first: what KeepAnswers takes up in another process (cadre
// watch --once run by cron), so its requests too are answered 304. The
// Client's secrets are masked in it, as in everything cadre writes.
func (c *Client) Answers() ([]byte, error) { return c.wire.answers.Marshal(c.scrub) }

// KeepAnswers takes up answers Answers wrote, for URLs of this Client's
// API only; what it keeps already stays. Data it cannot read is refused
// whole.
func (c *Client) KeepAnswers(data []byte) error {
	if err := c.wire.answers.Unmarshal(data, c.base.String()+"/"); err != nil {
		return fmt.Errorf("gitlab: %w", err)
	}
	return nil
}
