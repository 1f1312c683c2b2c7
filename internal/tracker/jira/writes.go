package jira

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Comment posts body (Markdown) on the issue once per marker: a comment
// carrying marker in its cadre property is looked for first, and looked
// for again when the post got no clear answer, so neither a retry nor a
// crash after the post makes a second one.
func (c *Client) Comment(ctx context.Context, ref, marker, body string) error {
	key, err := c.key(ref)
	if err != nil {
		return err
	}
	if marker == "" {
		return fmt.Errorf("jira: comment on %s: no marker to keep it to one comment", key)
	}
	flavor, api, err := c.api(ctx)
	if err != nil {
		return err
	}
	op := "comment on " + key
	unlock, err := c.items.Lock(ctx, key, nil)
	if err != nil {
		return c.fail(op, err)
	}
	defer unlock()
	if found, err := c.hasComment(ctx, op, api, key, marker); err != nil || found {
		return err
	}
	var content any = markdownToWiki(c.clean(body))
	if flavor == Cloud {
		content = MarkdownToADF(c.clean(body))
	}
	value, _ := json.Marshal(map[string]string{"marker": marker})
	post := map[string]any{"body": content, "properties": []property{{Key: propertyKey, Value: value}}}
	err = c.call(ctx, request{op: op, method: http.MethodPost, path: api + "/issue/" + key + "/comment", body: post, write: true})
	if err != nil && ambiguous(err) {
		if found, again := c.hasComment(ctx, op, api, key, marker); again == nil && found {
			return nil
		}
	}
	return err
}

func (c *Client) hasComment(ctx context.Context, op, api, key, marker string) (bool, error) {
	found := false
	err := c.comments(ctx, op, api, key, func(cm commentJSON) bool {
		m, ours := cm.marker()
		found = ours && m == marker
		return !found
	})
	return found, err
}

type transition struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	To   status `json:"to"`
}

// Move puts the issue in the status named state (case aside) by whichever
// transition leads there, whatever it is called. An issue in that status
// already is left alone, which also makes a repeated move a no-op.
func (c *Client) Move(ctx context.Context, ref, state string) error {
	key, err := c.key(ref)
	if err != nil {
		return err
	}
	_, api, err := c.api(ctx)
	if err != nil {
		return err
	}
	op := fmt.Sprintf("move %s to %q", key, state)
	unlock, err := c.items.Lock(ctx, key, nil)
	if err != nil {
		return c.fail(op, err)
	}
	defer unlock()
	current, err := c.status(ctx, op, api, key)
	if err != nil || strings.EqualFold(current, state) {
		return err
	}
	var ts struct {
		Transitions []transition `json:"transitions"`
	}
	err = c.call(ctx, request{op: op, method: http.MethodGet, path: api + "/issue/" + key + "/transitions", out: &ts})
	if err != nil {
		return err
	}
	var reachable []string
	for _, t := range ts.Transitions {
		if !strings.EqualFold(t.To.Name, state) {
			reachable = append(reachable, fmt.Sprintf("%q (by %q)", t.To.Name, t.Name))
			continue
		}
		post := map[string]any{"transition": map[string]string{"id": t.ID}}
		err := c.call(ctx, request{op: op, method: http.MethodPost, path: api + "/issue/" + key + "/transitions", body: post, write: true})
		if err != nil && ambiguous(err) {
			if now, again := c.status(ctx, op, api, key); again == nil && strings.EqualFold(now, state) {
				return nil
			}
		}
		return err
	}
	if len(reachable) == 0 {
		return &Error{Op: op, Message: fmt.Sprintf("no transition leads anywhere from %q for this user", current)}
	}
	return &Error{Op: op, Message: fmt.Sprintf("no transition from %q leads there; reachable: %s (check tracker.states)",
		current, strings.Join(reachable, ", "))}
}

func (c *Client) status(ctx context.Context, op, api, key string) (string, error) {
	var is issueJSON
	err := c.call(ctx, request{op: op, method: http.MethodGet, path: api + "/issue/" + key,
		query: url.Values{"fields": {"status"}}, out: &is})
	if err != nil || is.Fields.Status == nil {
		return "", err
	}
	return is.Fields.Status.Name, nil
}

// maxGlobalID is the longest globalId Jira keeps.
const maxGlobalID = 255

// globalID keys the remote link to url: Jira creates a link for a new
// globalId and updates the one it has otherwise, so linking twice (or
// again after a crash) leaves one link.
func globalID(link string) string {
	id := "cadre:" + link
	if len(id) > maxGlobalID {
		sum := sha256.Sum256([]byte(link))
		id = "cadre:sha256:" + hex.EncodeToString(sum[:])
	}
	return id
}

// Link attaches url (a pull request's) to the issue as a remote link
// titled title, once: Jira upserts it by its globalId.
func (c *Client) Link(ctx context.Context, ref, link, title string) error {
	key, err := c.key(ref)
	if err != nil {
		return err
	}
	_, api, err := c.api(ctx)
	if err != nil {
		return err
	}
	u, err := url.Parse(link)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("jira: link %s: %q is not an http(s) URL", key, link)
	}
	object := map[string]any{"url": link, "title": c.clean(title)}
	object["icon"] = map[string]string{"url16x16": u.Scheme + "://" + u.Host + "/favicon.ico", "title": u.Host}
	post := map[string]any{"globalId": globalID(link), "relationship": "pull request", "object": object}
	return c.call(ctx, request{op: "link " + key, method: http.MethodPost, path: api + "/issue/" + key + "/remotelink", body: post, write: true})
}
