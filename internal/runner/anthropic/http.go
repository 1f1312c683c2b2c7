package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cadre-dev/cadre/internal/proc"
)

// What bounds one exchange with a model API. The same plumbing serves each
// HTTP runner package.
const (
	maxBody   = 64 << 20 // far beyond any model's reply; past it the answer is refused
	maxErrMsg = 300      // bytes of a server's error message kept in an error
)

// answer is an API's HTTP response, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// post sends body as JSON to endpoint with header and reads the answer.
func post(ctx context.Context, c *http.Client, endpoint string, header http.Header, body any) (answer, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return answer{}, fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(data))
	if err != nil {
		return answer{}, fmt.Errorf("build request: %w", err)
	}
	req.Header = header.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return answer{}, fmt.Errorf("read the response of %s: %w", endpoint, err)
	}
	if len(b) > maxBody {
		return answer{}, fmt.Errorf("the response of %s is over %d MiB", endpoint, maxBody>>20)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// failed is the error Run returns when post failed: the step's own timeout
// or cancellation stays recognisable with errors.Is.
func failed(ctx context.Context, name string, timeout time.Duration, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && timeout > 0:
		return fmt.Errorf("runner %s: no answer within the step timeout of %s: %w", name, timeout, context.DeadlineExceeded)
	case ctx.Err() != nil:
		return fmt.Errorf("runner %s: %w", name, ctx.Err())
	}
	return fmt.Errorf("runner %s: %w", name, err)
}

// baseURL checks a configured base URL and drops its trailing slash.
func baseURL(name, raw, example string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("runners.%s.url %q is not an http(s) URL: set it like %s", name, raw, example)
	}
	return strings.TrimRight(raw, "/"), nil
}

// openLog opens the step's transcript for appending (a re-ask adds to it).
func openLog(path string) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open step log: %w", err)
	}
	return f, nil
}

// logText writes text to the transcript, at most proc.DefaultMaxLog bytes of
// it, like the log of an agent process.
func logText(w io.Writer, text string) {
	if len(text) > proc.DefaultMaxLog {
		fmt.Fprintf(w, "%s\n[output truncated after %d bytes]\n", text[:proc.DefaultMaxLog], proc.DefaultMaxLog)
		return
	}
	fmt.Fprintf(w, "%s\n", strings.TrimRight(text, "\n"))
}

// capReply bounds the reply kept in the Result like an agent's stdout. It
// keeps the end, where the SIGNAL BLOCK is.
func capReply(s string) string {
	const max = proc.DefaultMaxStdout
	if len(s) <= max {
		return s
	}
	const note = "[reply cut: only its end is kept]\n"
	i := len(s) - max + len(note)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return note + s[i:]
}

// brief makes a server's message fit in a one-line error, with the API key
// (should a server echo it) removed.
func brief(s, key string) string {
	if len(key) >= 8 {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxErrMsg {
		i := maxErrMsg
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i] + "…"
	}
	return s
}
