package forge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
)

// DefaultTokenEnv is the variable the token is read from when
// github.token_env is not set.
const DefaultTokenEnv = "GITHUB_TOKEN"

// ErrNoGH is what GHToken returns when the gh CLI is not installed.
var ErrNoGH = errors.New("gh is not installed")

// TokenFrom finds the GitHub token: the variable named tokenEnv
// (DefaultTokenEnv when empty), else what gh reports (`gh auth token`; gh
// may be nil), else an error saying how to provide one. The token itself
// never appears in an error.
func TokenFrom(ctx context.Context, getenv func(string) string, tokenEnv string, gh func(context.Context) (string, error)) (string, error) {
	name := strings.TrimSpace(tokenEnv)
	if name == "" {
		name = DefaultTokenEnv
	}
	if v := strings.TrimSpace(getenv(name)); v != "" {
		if err := checkToken(v); err != nil {
			return "", fmt.Errorf("$%s: %w", name, err)
		}
		return v, nil
	}
	why := "gh is not installed"
	if gh != nil {
		tok, err := gh(ctx)
		tok = strings.TrimSpace(tok)
		switch {
		case err == nil && tok != "":
			if err := checkToken(tok); err != nil {
				return "", fmt.Errorf("gh auth token: %w", err)
			}
			return tok, nil
		case errors.Is(err, ErrNoGH):
		case err != nil:
			why = "gh auth token failed: " + oneLine(err.Error())
		default:
			why = "gh auth token printed nothing"
		}
	}
	return "", fmt.Errorf("no GitHub token: $%s is empty and %s; export %s (or name another variable in github.token_env in cadre.yaml), or run `gh auth login`", name, why, name)
}

// GHToken returns a function that asks the gh CLI for its token for the
// host of apiURL (github.com when empty or api.github.com). It returns
// ErrNoGH when gh is not installed.
func GHToken(apiURL string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		path, err := exec.LookPath("gh")
		if err != nil {
			return "", ErrNoGH
		}
		args := []string{"auth", "token"}
		if h := ghHost(apiURL); h != "" {
			args = append(args, "--hostname", h)
		}
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, path, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			if msg := oneLine(stderr.String()); msg != "" {
				return "", fmt.Errorf("%w: %s", err, msg)
			}
			return "", err
		}
		return strings.TrimSpace(stdout.String()), nil
	}
}

// ghHost is the --hostname for gh: none for github.com.
func ghHost(apiURL string) string {
	u, err := url.Parse(apiURL)
	if err != nil {
		return ""
	}
	switch h := u.Hostname(); h {
	case "", "api.github.com", "github.com":
		return ""
	default:
		return h
	}
}
