package linear

import (
	"context"
	"crypto/sha256"
	"fmt"
	"github.com/cadre-dev/cadre/internal/fence"
	"net/url"
	"regexp"
	"strings"
)

// lockIssue holds key for a look-up-then-write, so two callers for the
// same issue cannot both find nothing and both write.
func (c *Client) lockIssue(ctx context.Context, op, key string) (func(), error) {
	unlock, err := c.items.Lock(ctx, key, nil)
	if err != nil {
		return nil, fmt.Errorf("linear: %s: %w", op, err)
	}
	return unlock, nil
}

// markerText is what a marker may hold: it must stay one code span on one
// line, and read back exactly as written.
var markerText = regexp.MustCompile("^[^\\s`<>\\\\]+$")

// tagOf is the last line that keys a comment: the marker (cadre's prefix
// added once) in a code span.
func tagOf(marker string) (string, error) {
	m := strings.TrimPrefix(marker, "cadre:")
	if !markerText.MatchString(m) {
		return "", fmt.Errorf("marker %q must be non-empty, one word, without '`', '<', '>' or '\\'", marker)
	}
	return "`cadre:" + m + "`", nil
}

// ownTag matches a line that marks a comment as cadre's.
var ownTag = regexp.MustCompile("^`cadre:[^\\s`]+`$")

// ownComment reports whether body is one cadre posted: a line of it, not
// inside a fenced code block, is a marker.
func ownComment(body string) bool {
	found := false
	fence.Lines(body, func(line string) bool {
		found = ownTag.MatchString(line)
		return !found
	})
	return found
}

// carries reports whether body holds tag on a line of its own outside
// fenced code blocks: a comment quoting another's marker in a code block
// (a bug report about cadre) is not the comment the marker keys.
func carries(body, tag string) bool {
	found := false
	fence.Lines(body, func(line string) bool {
		found = line == tag
		return !found
	})
	return found
}

// commentID is the id the comment for marker on issue (Linear's UUID of
// it) is created with: the same on every attempt, so Linear refuses a
// second one. It has the form of a version-4 UUID, which the API asks for.
func commentID(issueID, marker string) string {
	sum := sha256.Sum256([]byte("cadre comment\x00" + issueID + "\x00" + marker))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func hasComment(comments []commentNode, id, tag string) bool {
	for _, cm := range comments {
		if cm.ID == id || carries(cm.Body, tag) {
			return true
		}
	}
	return false
}

// Comment posts body (Markdown) on issue key once per marker: unless a
// comment with the marker's id or line is there already, and, when the
// post fails, unless one is there after all.
func (c *Client) Comment(ctx context.Context, key, marker, body string) error {
	key, err := c.key("comment", key)
	if err != nil {
		return err
	}
	op := "comment on " + key
	tag, err := tagOf(marker)
	if err != nil {
		return fmt.Errorf("linear: %s: %w", op, err)
	}
	unlock, err := c.lockIssue(ctx, op, key)
	if err != nil {
		return err
	}
	defer unlock()
	is, comments, err := c.fetchIssue(ctx, op, key)
	if err != nil {
		return err
	}
	id := commentID(is.ID, tag)
	if hasComment(comments, id, tag) {
		return nil
	}
	input := map[string]any{"id": id, "issueId": is.ID, "body": strings.TrimRight(c.clean(body), "\n") + "\n\n" + tag}
	var data struct {
		CommentCreate struct {
			Success bool `json:"success"`
		} `json:"commentCreate"`
	}
	err = c.call(ctx, op, opCommentCreate, map[string]any{"input": input}, &data)
	if err == nil && !data.CommentCreate.Success {
		err = &Error{Op: op, Message: "Linear did not create the comment"}
	}
	if err == nil || IsRateLimited(err) || ctx.Err() != nil {
		return err
	}
	// No answer, a failure, or Linear refusing the id as taken: the
	// comment may be there all the same.
	if _, again, lerr := c.fetchIssue(ctx, op, key); lerr == nil && hasComment(again, id, tag) {
		return nil
	}
	return err
}

// Move puts issue key in the team's workflow state named state (any
// case). An issue there already is left alone; a state the team lacks is
// refused, naming the states it has.
func (c *Client) Move(ctx context.Context, key, state string) error {
	key, err := c.key("move", key)
	if err != nil {
		return err
	}
	op := fmt.Sprintf("move %s to %q", key, state)
	unlock, err := c.lockIssue(ctx, op, key)
	if err != nil {
		return err
	}
	defer unlock()
	is, err := c.states(ctx, op, key)
	if err != nil {
		return err
	}
	if strings.EqualFold(is.State.Name, strings.TrimSpace(state)) {
		return nil
	}
	target, names := "", make([]string, 0, len(is.Team.States.Nodes))
	for _, s := range is.Team.States.Nodes {
		names = append(names, s.Name)
		if strings.EqualFold(s.Name, strings.TrimSpace(state)) {
			target = s.ID
		}
	}
	if target == "" {
		return fmt.Errorf("linear: %s: team %s has no workflow state named %q; its states: %s",
			op, c.team, state, strings.Join(names, ", "))
	}
	var data struct {
		IssueUpdate struct {
			Success bool `json:"success"`
		} `json:"issueUpdate"`
	}
	err = c.call(ctx, op, opIssueUpdate, map[string]any{"id": is.ID, "input": map[string]any{"stateId": target}}, &data)
	if err == nil && !data.IssueUpdate.Success {
		err = &Error{Op: op, Message: "Linear did not update the issue"}
	}
	if err != nil && ambiguous(err) && ctx.Err() == nil {
		if again, lerr := c.states(ctx, op, key); lerr == nil && again.State.ID == target {
			return nil
		}
	}
	return err
}

// states reads issue key's state and its team's workflow states.
func (c *Client) states(ctx context.Context, op, key string) (issueStates, error) {
	var data struct {
		Issue *issueStates `json:"issue"`
	}
	if err := c.call(ctx, op, opIssueStates, map[string]any{"id": key}, &data); err != nil {
		return issueStates{}, err
	}
	if data.Issue == nil {
		return issueStates{}, &Error{Op: op, Message: "no such issue (or no access to it)"}
	}
	return *data.Issue, c.sameTeam(op, key, data.Issue.Team.Key)
}

// Link attaches link (a pull request's URL) to issue key, titled title,
// unless an attachment of that URL is there already. Linear keys an
// issue's attachments by URL, so even a repeated create makes no second.
func (c *Client) Link(ctx context.Context, key, link, title string) error {
	key, err := c.key("link", key)
	if err != nil {
		return err
	}
	op := "link " + key + " to " + link
	if u, perr := url.Parse(link); perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("linear: %s: %q is not an http(s) URL", op, link)
	}
	unlock, err := c.lockIssue(ctx, op, key)
	if err != nil {
		return err
	}
	defer unlock()
	is, found, err := c.attached(ctx, op, key, link)
	if err != nil || found {
		return err
	}
	if strings.TrimSpace(title) == "" {
		title = link
	}
	input := map[string]any{"issueId": is, "url": link, "title": c.clean(oneLine(title))}
	var data struct {
		AttachmentCreate struct {
			Success bool `json:"success"`
		} `json:"attachmentCreate"`
	}
	err = c.call(ctx, op, opAttachmentCreate, map[string]any{"input": input}, &data)
	if err == nil && !data.AttachmentCreate.Success {
		err = &Error{Op: op, Message: "Linear did not create the attachment"}
	}
	if err != nil && ambiguous(err) && ctx.Err() == nil {
		if _, ok, lerr := c.attached(ctx, op, key, link); lerr == nil && ok {
			return nil
		}
	}
	return err
}

// attached returns issue key's id and whether it has an attachment of
// link.
func (c *Client) attached(ctx context.Context, op, key, link string) (string, bool, error) {
	var data struct {
		Issue *issueAttachments `json:"issue"`
	}
	if err := c.call(ctx, op, opAttachments, map[string]any{"id": key, "url": link}, &data); err != nil {
		return "", false, err
	}
	if data.Issue == nil {
		return "", false, &Error{Op: op, Message: "no such issue (or no access to it)"}
	}
	if err := c.sameTeam(op, key, data.Issue.Team.Key); err != nil {
		return "", false, err
	}
	for _, a := range data.Issue.Attachments.Nodes {
		if a.URL == link {
			return data.Issue.ID, true, nil
		}
	}
	return data.Issue.ID, false, nil
}
