package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// RequiredChecks lists the checks the base branch requires before a merge:
// the contexts of its classic protection and of the rulesets that apply to
// it. readable is false when the token may not read the protection (403):
// the caller then knows only what it was told elsewhere.
func (c *Client) RequiredChecks(ctx context.Context, owner, repo, branch string) (names []string, readable bool, err error) {
	op := fmt.Sprintf("read the checks %s/%s's %s requires", owner, repo, branch)
	if err := checkRepo(owner, repo); err != nil {
		return nil, false, fmt.Errorf("github: %s: %w", op, err)
	}
	if err := checkRef(branch); err != nil {
		return nil, false, fmt.Errorf("github: %s: %w", op, err)
	}
	readable = true
	var prot struct {
		Contexts []string `json:"contexts"`
		Checks   []struct {
			Context string `json:"context"`
		} `json:"checks"`
	}
	path := fmt.Sprintf("%s/branches/%s/protection/required_status_checks", repoPath(owner, repo), url.PathEscape(branch))
	_, err = c.do(ctx, call{op: op, method: http.MethodGet, path: path, out: &prot, resend: true})
	switch {
	case err == nil:
		names = append(names, prot.Contexts...)
		for _, ch := range prot.Checks {
			names = append(names, ch.Context)
		}
	case IsNotFound(err):
		// Not protected, or no required checks.
	case isForbidden(err):
		readable = false
	default:
		return nil, false, err
	}
	var rules []struct {
		Type       string `json:"type"`
		Parameters struct {
			Checks []struct {
				Context string `json:"context"`
			} `json:"required_status_checks"`
		} `json:"parameters"`
	}
	path = fmt.Sprintf("%s/rules/branches/%s", repoPath(owner, repo), url.PathEscape(branch))
	_, err = c.do(ctx, call{op: op, method: http.MethodGet, path: path, query: url.Values{"per_page": {"100"}}, out: &rules, resend: true})
	switch {
	case err == nil:
		for _, r := range rules {
			if r.Type == "required_status_checks" {
				for _, ch := range r.Parameters.Checks {
					names = append(names, ch.Context)
				}
			}
		}
	case IsNotFound(err):
	case isForbidden(err):
		readable = false
	default:
		return nil, false, err
	}
	slices.Sort(names)
	return slices.Compact(names), readable, nil
}

func isForbidden(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusForbidden && e.RetryAfter == 0
}

// AddLabels adds labels to issue or pull request number; one it has
// already stays as it is.
func (c *Client) AddLabels(ctx context.Context, owner, repo string, number int, labels []string) error {
	op := fmt.Sprintf("label %s/%s#%d", owner, repo, number)
	if err := checkRepo(owner, repo); err != nil {
		return fmt.Errorf("github: %s: %w", op, err)
	}
	path := fmt.Sprintf("%s/issues/%d/labels", repoPath(owner, repo), number)
	_, err := c.do(ctx, call{op: op, method: http.MethodPost, path: path, body: map[string][]string{"labels": labels},
		resend: true, key: issueKey(owner, repo, number)})
	return err
}

// RemoveLabel takes label off issue or pull request number; one it does
// not have is no error.
func (c *Client) RemoveLabel(ctx context.Context, owner, repo string, number int, label string) error {
	op := fmt.Sprintf("unlabel %s/%s#%d", owner, repo, number)
	if err := checkRepo(owner, repo); err != nil {
		return fmt.Errorf("github: %s: %w", op, err)
	}
	if strings.TrimSpace(label) == "" {
		return fmt.Errorf("github: %s: no label", op)
	}
	path := fmt.Sprintf("%s/issues/%d/labels/%s", repoPath(owner, repo), number, url.PathEscape(label))
	_, err := c.do(ctx, call{op: op, method: http.MethodDelete, path: path, resend: true, key: issueKey(owner, repo, number)})
	if IsNotFound(err) {
		return nil
	}
	return err
}
