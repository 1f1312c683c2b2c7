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
//
// A secret also leaks in part: a message cut short, or the tail of a
// program's stderr, holds only a fragment of it, and a fragment of a key is
// most of what an attacker needs. So any run of RunLen or more characters
// of any of those spellings is masked too, wherever it stands. The runs are
// found through an index of each spelling's RunLen-grams, so masking costs
// a map look-up per byte of text, whatever the number of secrets.
package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"io"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Mask replaces every redacted occurrence.
const Mask = "[REDACTED]"

// MinLen is the shortest secret a Redactor masks: shorter values match
// ordinary text far too often to be worth hiding.
const MinLen = 8

// RunLen is the shortest fragment of a secret's spelling that is masked on
// its own: shorter runs of its characters occur in ordinary text.
const RunLen = 12

// maxPasses bounds re-scanning when masking could itself spell a secret
// (a secret containing '[' or ']' next to a mask); past it the whole text
// is masked, so the output still never carries a secret.
const maxPasses = 8

// Redactor masks a set of secrets. The zero value and a nil *Redactor
// mask nothing. A Redactor is safe for concurrent use, Add included: a
// secret cadre learns late (a token asked of gh on first use) joins the
// ones known from the start.
type Redactor struct {
	mu  sync.Mutex            // serialises Add
	tab atomic.Pointer[table] // nil: nothing to mask
}

// table is what a Redactor masks at one time; it never changes once built.
type table struct {
	secrets []string // as given, for Add to build on
	// short are the spellings shorter than RunLen, by their first byte,
	// longest first: only whole, they are masked.
	short [256][][]byte
	// runs indexes every RunLen-gram of the longer spellings: the
	// suffixes of spellings that start with it, none the prefix of
	// another. A match is the longest run the text shares with one.
	runs map[string][]string
	// heads has the bit of every key of runs set (see head): a cheap test
	// before the map is asked.
	heads  *[1 << headBits / 64]uint64
	any    bool // anything to mask
	maxLen int  // the longest spelling: no match is longer
	// rescan is set when a spelling holds '[' or ']': only then can a
	// mask next to kept text spell a form anew, so only then is a second
	// pass needed.
	rescan bool
}

// New returns a Redactor for secrets. Empty secrets, secrets shorter than
// MinLen, and spellings that occur inside Mask itself are ignored.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add masks secrets too, from now on (ignoring those New would).
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var all []string
	if t := r.tab.Load(); t != nil {
		all = slices.Clone(t.secrets)
	}
	added := false
	for _, s := range secrets {
		if len(s) >= MinLen && !slices.Contains(all, s) {
			all, added = append(all, s), true
		}
	}
	if added {
		r.tab.Store(build(all))
	}
}

// build makes the table of secrets.
func build(secrets []string) *table {
	seen := map[string]bool{}
	var forms []string
	for _, s := range secrets {
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
	t := &table{secrets: secrets, runs: map[string][]string{}, heads: new([1 << headBits / 64]uint64)}
	for _, f := range forms {
		t.any = true
		t.maxLen = max(t.maxLen, len(f))
		if strings.ContainsAny(f, "[]") {
			t.rescan = true
		}
		if len(f) < RunLen {
			t.short[f[0]] = append(t.short[f[0]], []byte(f))
			continue
		}
		for i := 0; i+RunLen <= len(f); i++ {
			gram := f[i : i+RunLen]
			t.runs[gram] = append(t.runs[gram], f[i:])
			h := head([]byte(gram))
			t.heads[h/64] |= 1 << (h % 64)
		}
	}
	for gram, suffixes := range t.runs {
		t.runs[gram] = longest(suffixes)
	}
	return t
}

// headBits sizes table.heads: 32 KiB, few enough keys set for ordinary
// text to pass the test rarely.
const headBits = 18

// head is the bit of table.heads for a gram: a hash of its first 8 bytes.
func head(gram []byte) uint64 {
	return binary.LittleEndian.Uint64(gram) * 0x9E3779B97F4A7C15 >> (64 - headBits)
}

// longest drops from suffixes those another one starts with: the longer
// always matches at least as far.
func longest(suffixes []string) []string {
	sort.SliceStable(suffixes, func(i, j int) bool { return len(suffixes[i]) > len(suffixes[j]) })
	var out []string
	for _, s := range suffixes {
		if !slices.ContainsFunc(out, func(o string) bool { return strings.HasPrefix(o, s) }) {
			out = append(out, s)
		}
	}
	return out
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

// table is r's current table; nil when r masks nothing.
func (r *Redactor) table() *table {
	if r == nil {
		return nil
	}
	if t := r.tab.Load(); t != nil && t.any {
		return t
	}
	return nil
}

// Enabled reports whether r masks anything.
func (r *Redactor) Enabled() bool { return r.table() != nil }

// String returns s with every secret spelling replaced by Mask.
func (r *Redactor) String(s string) string {
	t := r.table()
	if t == nil {
		return s
	}
	out, changed := t.redact([]byte(s))
	if !changed {
		return s
	}
	return string(out)
}

// Bytes returns b with every secret spelling replaced by Mask. When nothing
// matched it returns b itself; otherwise a new slice.
func (r *Redactor) Bytes(b []byte) []byte {
	t := r.table()
	if t == nil {
		return b
	}
	out, _ := t.redact(b)
	return out
}

// redact masks b until no form remains, reporting whether anything changed.
func (t *table) redact(b []byte) ([]byte, bool) {
	out, changed := t.pass(b)
	if !changed || !t.rescan {
		return out, changed
	}
	for range maxPasses {
		next, again := t.pass(out)
		if !again {
			return out, true
		}
		out = next
	}
	return []byte(Mask), true
}

// pass replaces the leftmost-longest occurrence of each form once,
// scanning left to right.
func (t *table) pass(b []byte) ([]byte, bool) {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		n := t.matchAt(b, i)
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

// matchAt returns the length of the longest match at b[i:]: a whole
// spelling, or a run of RunLen or more bytes of one; 0 for none.
func (t *table) matchAt(b []byte, i int) int {
	rest := b[i:]
	long := len(rest) >= RunLen && t.heads[head(rest)/64]&(1<<(head(rest)%64)) != 0
	if !long && t.short[rest[0]] == nil {
		return 0 // the common case, kept cheap
	}
	n := 0
	if long {
		for _, s := range t.runs[string(rest[:RunLen])] {
			n = max(n, common(rest, s))
		}
	}
	if n >= RunLen {
		return n // no short spelling is as long
	}
	for _, f := range t.short[rest[0]] {
		if bytes.HasPrefix(rest, f) {
			return max(n, len(f))
		}
	}
	return n
}

// common is the length of the longest common prefix of b and s.
func common(b []byte, s string) int {
	n := min(len(b), len(s))
	for i := range n {
		if b[i] != s[i] {
			return i
		}
	}
	return n
}

// Writer masks secrets in everything written through it. It holds back
// the last few bytes of each write, since a secret may be split across two
// writes; Flush (or Close) writes them out. It masks the secrets its
// Redactor held when it was made.
type Writer struct {
	t       *table // nil: nothing to mask
	w       io.Writer
	pending []byte // not yet written: raw, or already masked when t.rescan
}

// Writer returns a Writer that masks secrets before writing to w.
func (r *Redactor) Writer(w io.Writer) *Writer { return &Writer{t: r.table(), w: w} }

// Write masks p and writes all of it that can no longer be part of a
// secret. It reports len(p) on success: every byte was taken.
func (w *Writer) Write(p []byte) (int, error) {
	t := w.t
	if t == nil {
		return w.w.Write(p)
	}
	buf := append(w.pending, p...)
	// A form starting before cut ends inside buf; whatever starts later
	// may still grow into a secret with the next write.
	cut := len(buf) - (t.maxLen - 1)
	var out []byte
	if t.rescan {
		// Masks may combine with later text into a form, so what is held
		// back is already masked and is scanned again with what follows.
		buf, _ = t.redact(buf)
		cut = len(buf) - (t.maxLen - 1)
		if cut <= 0 {
			w.pending = buf
			return len(p), nil
		}
		out, w.pending = buf[:cut], append([]byte(nil), buf[cut:]...)
	} else {
		var stop int
		out, stop = t.scan(buf, cut)
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
func (t *table) scan(b []byte, limit int) ([]byte, int) {
	var out []byte
	last, i := 0, 0
	for i < limit {
		n := t.matchAt(b, i)
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
	if !w.t.rescan {
		p, _ = w.t.redact(p)
	}
	_, err := w.w.Write(p)
	return err
}

// Close flushes; it does not close the underlying writer.
func (w *Writer) Close() error { return w.Flush() }
