package forge

// Answers is what the Client keeps for conditional requests, as JSON, most
// recently used first: what KeepAnswers takes up in another process (cadre
// watch --once run by cron), so its requests too are answered 304. The
// Client's secrets stay masked in it.
func (c *Client) Answers() ([]byte, error) { return c.answers.Marshal(c.scrub) }

// KeepAnswers takes up answers Answers wrote, for URLs of this Client's
// API only; what it keeps already stays.
func (c *Client) KeepAnswers(data []byte) error {
	return c.answers.Unmarshal(data, c.base.String()+"/")
}
