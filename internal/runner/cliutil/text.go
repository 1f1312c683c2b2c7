package cliutil

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// retryPattern finds the wait a provider asks for in a message, in a unit.
var retryPattern = regexp.MustCompile(`(?i)(?:try again in|retry in|retry after)\s+([0-9]+(?:\.[0-9]+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)\b`)

// RetryAfter reads the wait an error message asks for ("Please try again in
// 4.45s", "retry after 2 minutes"); 0 when it names none.
func RetryAfter(msg string) time.Duration {
	m := retryPattern.FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	unit := time.Second
	switch u := strings.ToLower(m[2]); {
	case strings.HasPrefix(u, "ms") || strings.HasPrefix(u, "milli"):
		unit = time.Millisecond
	case strings.HasPrefix(u, "m"):
		unit = time.Minute
	}
	return time.Duration(n * float64(unit))
}

// Note sends s to progress, if any, as one line of at most NoteMax
// characters.
func Note(progress func(string), s string) {
	if progress != nil {
		progress(Short(s, NoteMax))
	}
}

// ToolNote names a tool call by its tool and the first of keys that its
// input holds as a non-empty string: the argument that says most.
func ToolNote(name string, input map[string]any, keys ...string) string {
	for _, key := range keys {
		if v, ok := input[key].(string); ok && v != "" {
			return name + " " + v
		}
	}
	return name
}

// Short makes s one line of at most n characters, ending in "…" when cut.
func Short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// FirstLine is the first non-blank line of s, to name a message briefly.
func FirstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

// ContainsAny reports whether s contains one of subs.
func ContainsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
