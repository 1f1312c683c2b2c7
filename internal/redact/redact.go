// Package redact removes secret values from text before it is written
// anywhere a person or another program can read it: logs, events, prompts,
// pull request bodies, files under .cadre/.
//
// A secret leaks in more shapes than its plain spelling: git sends a token
// inside a base64 "Authorization: basic" header, and URLs carry it
// percent-encoded. A Redactor therefore masks every occurrence of each
// secret, of its base64 encodings (standard and URL alphabets, with and
// without padding, and as the run of characters it produces inside a longer
// base64 stream at any alignment) and of its query- and path-escaped forms.
package redact

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/url"
	"sort"
	"strings"
)

// Mask replaces every redacted occurrence.
const Mask = "[REDACTED]"

// MinLen is the shortest secret a Redactor masks: shorter values match
// ordinary text far too often to be worth hiding.
const MinLen = 8

// maxPasses bounds re-scanning when masking could itself spell a secret
// (a secret containing '[' or ']' next to a mask); past it the whole text
// is masked, so the output still never carries a secret.
const maxPasses = 8

// Redactor masks a fixed set of secrets. The zero value and a nil
// *Redactor mask nothing. A Redactor is safe for concurrent use.
type Redactor struct {
	forms   [][]byte          // every spelling to mask, longest first
	byFirst map[byte][][]byte // forms by their first byte, longest first
	maxLen  int
	// rescan is set when a form holds '[' or ']': only then can a mask
	// next to kept text spell a form anew, so only then is a second
	// pass needed.
	rescan bool
}

// New returns a Redactor for secrets. Empty secrets, secrets shorter than
// MinLen, and spellings that occur inside Mask itself are ignored.
func New(secrets ...string) *Redactor {
	seen := map[string]bool{}
	var forms []string
	for _, s := range secrets {
		if len(s) < MinLen {
			continue
		}
		for _, f := range spellings(s) {
			if f == "" || seen[f] || strings.Contains(Mask, f) {
				continue
			}
			seen[f] = true
			forms = append(forms, f)
		}
	}
	// Longest first: where two spellings start at the same byte, the
	// longer one (a padded encoding, say) must win so no tail is left.
	sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	r := &Redactor{byFirst: map[byte][][]byte{}}
	for _, f := range forms {
		b := []byte(f)
		r.forms = append(r.forms, b)
		r.byFirst[b[0]] = append(r.byFirst[b[0]], b)
		r.maxLen = max(r.maxLen, len(b))
		if strings.ContainsAny(f, "[]") {
			r.rescan = true
		}
	}
	return r
}

// spellings lists the forms of s that are masked.
func spellings(s string) []string {
	out := []string{s, url.QueryEscape(s), url.PathEscape(s)}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, enc.EncodeToString([]byte(s)), enc.WithPadding(base64.NoPadding).EncodeToString([]byte(s)))
		// Inside a longer stream (base64 of "user:token") the secret's
		// characters depend on its offset modulo 3. For each offset keep
		// only the characters that encode secret bits alone.
		for k := range 3 {
			in := append(make([]byte, k), s...)
			e := enc.WithPadding(base64.NoPadding).EncodeToString(in)
			start := (8*k + 5) / 6
			end := 8 * len(in) / 6
			if end > start {
				out = append(out, e[start:end])
			}
		}
	}
	return out
}

// Enabled reports whether r masks anything.
func (r *Redactor) Enabled() bool { return r != nil && len(r.forms) > 0 }

// String returns s with every secret spelling replaced by Mask.
func (r *Redactor) String(s string) string {
	if !r.Enabled() {
		return s
	}
	out, changed := r.redact([]byte(s))
	if !changed {
		return s
	}
	return string(out)
}

// Bytes returns b with every secret spelling replaced by Mask. When nothing
// matched it returns b itself; otherwise a new slice.
func (r *Redactor) Bytes(b []byte) []byte {
	if !r.Enabled() {
		return b
	}
	out, _ := r.redact(b)
	return out
}

// redact masks b until no form remains, reporting whether anything changed.
func (r *Redactor) redact(b []byte) ([]byte, bool) {
	out, changed := r.pass(b)
	if !changed || !r.rescan {
		return out, changed
	}
	for range maxPasses {
		next, again := r.pass(out)
		if !again {
			return out, true
		}
		out = next
	}
	return []byte(Mask), true
}

// pass replaces the leftmost-longest occurrence of each form once,
// scanning left to right.
func (r *Redactor) pass(b []byte) ([]byte, bool) {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		n := r.matchAt(b, i)
		if n == 0 {
			i++
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b))
		}
		out = append(out, b[last:i]...)
		out = append(out, Mask...)
		i += n
		last = i
	}
	if out == nil {
		return b, false
	}
	return append(out, b[last:]...), true
}

// matchAt returns the length of the longest form at b[i:], or 0.
func (r *Redactor) matchAt(b []byte, i int) int {
	for _, f := range r.byFirst[b[i]] {
		if bytes.HasPrefix(b[i:], f) {
			return len(f)
		}
	}
	return 0
}

// Writer masks secrets in everything written through it. It holds back
// the last few bytes of each write, since a secret may be split across two
// writes; Flush (or Close) writes them out.
type Writer struct {
	r       *Redactor
	w       io.Writer
	pending []byte // not yet written: raw, or already masked when r.rescan
}

// Writer returns a Writer that masks secrets before writing to w.
func (r *Redactor) Writer(w io.Writer) *Writer { return &Writer{r: r, w: w} }

// Write masks p and writes all of it that can no longer be part of a
// secret. It reports len(p) on success: every byte was taken.
func (w *Writer) Write(p []byte) (int, error) {
	if !w.r.Enabled() {
		return w.w.Write(p)
	}
	buf := append(w.pending, p...)
	// A form starting before cut ends inside buf; whatever starts later
	// may still grow into a secret with the next write.
	cut := len(buf) - (w.r.maxLen - 1)
	var out []byte
	if w.r.rescan {
		// Masks may combine with later text into a form, so what is held
		// back is already masked and is scanned again with what follows.
		buf, _ = w.r.redact(buf)
		cut = len(buf) - (w.r.maxLen - 1)
		if cut <= 0 {
			w.pending = buf
			return len(p), nil
		}
		out, w.pending = buf[:cut], append([]byte(nil), buf[cut:]...)
	} else {
		var stop int
		out, stop = w.r.scan(buf, cut)
		w.pending = append([]byte(nil), buf[stop:]...)
	}
	if len(out) > 0 {
		if _, err := w.w.Write(out); err != nil {
			w.pending = nil
			return 0, err
		}
	}
	return len(p), nil
}

// scan masks the forms starting before limit and returns the text up to
// where it stopped: limit, or the end of a form that crossed it.
func (r *Redactor) scan(b []byte, limit int) ([]byte, int) {
	var out []byte
	last, i := 0, 0
	for i < limit {
		n := r.matchAt(b, i)
		if n == 0 {
			i++
			continue
		}
		out = append(out, b[last:i]...)
		out = append(out, Mask...)
		i += n
		last = i
	}
	return append(out, b[last:i]...), i
}

// Flush writes the bytes held back by Write.
func (w *Writer) Flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	p := w.pending
	w.pending = nil
	if !w.r.rescan {
		p, _ = w.r.redact(p)
	}
	_, err := w.w.Write(p)
	return err
}

// Close flushes; it does not close the underlying writer.
func (w *Writer) Close() error { return w.Flush() }
