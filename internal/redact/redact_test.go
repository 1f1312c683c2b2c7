package redact

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
)

const token = "ghp_Secret/Token+Value=42"

func TestString(t *testing.T) {
	r := New(token, "short", "")
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	tests := []struct {
		name, in, want string
	}{
		{"plain", "token " + token + " end", "token [REDACTED] end"},
		{"twice", token + token, "[REDACTED][REDACTED]"},
		{"std base64", base64.StdEncoding.EncodeToString([]byte(token)), Mask},
		{"std base64 raw", base64.RawStdEncoding.EncodeToString([]byte(token)), Mask},
		{"url base64", base64.URLEncoding.EncodeToString([]byte(token)), Mask},
		{"url base64 raw", base64.RawURLEncoding.EncodeToString([]byte(token)), Mask},
		{"query escaped", "?t=" + url.QueryEscape(token), "?t=" + Mask},
		{"path escaped", "/x/" + url.PathEscape(token) + "/y", "/x/" + Mask + "/y"},
		{"short secret ignored", "a short word", "a short word"},
		{"no secret", "nothing to hide", "nothing to hide"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.String(tt.in); got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	t.Run("inside a basic auth header", func(t *testing.T) {
		got := r.String("AUTHORIZATION: basic " + basic)
		if strings.Contains(got, basic) || !strings.Contains(got, Mask) {
			t.Errorf("basic header not masked: %q", got)
		}
	})
}

// Every alignment of the secret inside a longer base64 stream is caught.
func TestBase64Alignments(t *testing.T) {
	r := New(token)
	for _, prefix := range []string{"", "a", "ab", "abc", "user:", "x-access-token:"} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding} {
			in := enc.EncodeToString([]byte(prefix + token + "!tail"))
			got := r.String(in)
			if got == in {
				t.Errorf("prefix %q: %q not masked", prefix, in)
			}
			// The characters that encode only the secret are gone.
			if dec, err := enc.DecodeString(strings.ReplaceAll(got, Mask, "")); err == nil && bytes.Contains(dec, []byte(token)) {
				t.Errorf("prefix %q: secret still decodes from %q", prefix, got)
			}
		}
	}
}

func TestZeroAndNil(t *testing.T) {
	var nilR *Redactor
	if got := nilR.String(token); got != token {
		t.Errorf("nil redactor changed text: %q", got)
	}
	if New().Enabled() || nilR.Enabled() || New("1234567").Enabled() {
		t.Error("redactor without usable secrets reports enabled")
	}
	if !New("12345678").Enabled() {
		t.Error("8-byte secret not used")
	}
	// A spelling that is part of the mask cannot be hidden by it and is
	// ignored; the secret's other spellings are still masked.
	m := New("REDACTED")
	if got := m.String(Mask); got != Mask {
		t.Errorf("mask rewritten to %q", got)
	}
	if got := m.String(base64.StdEncoding.EncodeToString([]byte("REDACTED"))); got != Mask {
		t.Errorf("base64 of a mask-like secret kept: %q", got)
	}
}

func TestBytes(t *testing.T) {
	r := New(token)
	in := []byte("a " + token + " b")
	if got := string(r.Bytes(in)); got != "a [REDACTED] b" {
		t.Errorf("Bytes = %q", got)
	}
	clean := []byte("clean")
	if got := r.Bytes(clean); &got[0] != &clean[0] {
		t.Error("Bytes copied text with nothing to mask")
	}
}

// A mask next to kept text must not spell a secret that holds brackets.
func TestMaskCannotSpellSecret(t *testing.T) {
	r := New("ED]xyzwv")
	in := "ED]xyzwvxyzwv"
	got := r.String(in)
	if strings.Contains(got, "ED]xyzwv") {
		t.Errorf("String(%q) = %q still holds the secret", in, got)
	}
}

func TestWriterSplitSecret(t *testing.T) {
	r := New(token, "another-secret-value")
	text := "start " + token + " middle another-secret-value end " + base64.StdEncoding.EncodeToString([]byte(token))
	for _, size := range []int{1, 2, 3, 7, 16, len(text)} {
		var buf bytes.Buffer
		w := r.Writer(&buf)
		for i := 0; i < len(text); i += size {
			n, err := w.Write([]byte(text[i:min(i+size, len(text))]))
			if err != nil || n != min(size, len(text)-i) {
				t.Fatalf("size %d: Write = %d, %v", size, n, err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got, want := buf.String(), r.String(text); got != want {
			t.Errorf("chunks of %d: wrote %q, want %q", size, got, want)
		}
	}
}

func TestWriterDisabledPassesThrough(t *testing.T) {
	var buf bytes.Buffer
	w := New().Writer(&buf)
	if _, err := w.Write([]byte("as is")); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "as is" {
		t.Errorf("wrote %q", buf.String())
	}
}

// leaks lists the spellings of secret, and the runs of RunLen characters
// of them, that out still holds.
func leaks(r *Redactor, secret, out string) []string {
	var bad []string
	for _, f := range spellings(secret) {
		if len(secret) < MinLen || f == "" || strings.Contains(Mask, f) {
			continue
		}
		if strings.Contains(out, f) {
			bad = append(bad, f)
		}
		for i := 0; i+RunLen <= len(f); i++ {
			if run := f[i : i+RunLen]; strings.Contains(out, run) {
				bad = append(bad, run)
			}
		}
	}
	return bad
}

func FuzzRedact(f *testing.F) {
	f.Add(token, "x "+token+" y", 3)
	f.Add("ED]xyzwv", "ED]xyzwvxyzwv", 1)
	f.Add("[REDACTED]x", "[REDACTED]x[REDACTED]xx", 2)
	f.Add("aaaaaaaa", "aaaaaaaaaaaaaaaaaaaaaaa", 5)
	f.Add("p@ss w/rd?&", "u="+url.QueryEscape("p@ss w/rd?&"), 4)
	f.Add("0123456789abcdefghij", "x3456789abcdefy 0123456789abcdefghij0123456789ab", 6)
	f.Add("]x[REDACTED]yy[RE", "]x[REDACTED]yy[REDACTED]yy[RE", 3)
	f.Fuzz(func(t *testing.T, secret, text string, chunk int) {
		r := New(secret)
		out := r.String(text)
		if bad := leaks(r, secret, out); len(bad) > 0 {
			t.Fatalf("String(%q) = %q leaks %q", text, out, bad)
		}
		var buf bytes.Buffer
		w := r.Writer(&buf)
		if chunk < 1 {
			chunk = 1
		}
		for i := 0; i < len(text); i += chunk {
			if _, err := w.Write([]byte(text[i:min(i+chunk, len(text))])); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if bad := leaks(r, secret, buf.String()); len(bad) > 0 {
			t.Fatalf("Writer(%q, chunks %d) = %q leaks %q", text, chunk, buf.String(), bad)
		}
		// Without brackets in a secret, chunking cannot change the result.
		if tab := r.table(); (tab == nil || !tab.rescan) && buf.String() != out {
			t.Fatalf("Writer(%q, chunks %d) = %q, String = %q", text, chunk, buf.String(), out)
		}
	})
}

// A secret added later (a token learnt on first use) is masked from then
// on, with those known before; a zero Redactor takes secrets too.
func TestAdd(t *testing.T) {
	var r Redactor
	if got := r.String(token); got != token || r.Enabled() {
		t.Fatalf("zero redactor masked %q", got)
	}
	r.Add("short", "")
	if r.Enabled() {
		t.Error("short secrets enabled the redactor")
	}
	r.Add(token)
	r.Add("another-secret-value", token)
	in := token + " " + base64.StdEncoding.EncodeToString([]byte("another-secret-value"))
	if got := r.String(in); got != Mask+" "+Mask {
		t.Errorf("String(%q) = %q", in, got)
	}
}

// A fragment of a secret, as a message cut short or a tail of stderr
// holds it, is masked once it is RunLen characters or more; so is a
// fragment of its base64 forms.
func TestFragments(t *testing.T) {
	const key = "sk-test-X81mLp0vQz7RtY2uWc4nBv6sDf8gHj1kLz3xCv5bNm7aQw9eRt"
	r := New(key)
	b64 := base64.StdEncoding.EncodeToString([]byte("x:" + key + ":y"))
	tests := []struct {
		name, in string
		gone     []string // none of these may remain
	}{
		{"head cut off", "executor exited with code 4: " + key[len(key)-50:] + strings.Repeat("z", 150), []string{key[len(key)-50:], key[len(key)-RunLen:]}},
		{"tail cut off", "see: " + key[:RunLen] + "…", []string{key[:RunLen]}},
		{"middle", "…" + key[10:30] + "…", []string{key[10:30]}},
		{"base64 cut", "Authorization: Basic " + b64[5:40], []string{b64[5 : 5+RunLen], b64[40-RunLen : 40]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.String(tt.in)
			for _, g := range tt.gone {
				if strings.Contains(got, g) {
					t.Errorf("String(%q) = %q keeps %q", tt.in, got, g)
				}
			}
			if !strings.Contains(got, Mask) {
				t.Errorf("String(%q) = %q masks nothing", tt.in, got)
			}
		})
	}
	// Fewer than RunLen characters in a row are ordinary text.
	short := "code " + key[5:5+RunLen-1] + " end"
	if got := r.String(short); got != short {
		t.Errorf("String(%q) = %q, a run shorter than %d masked", short, got, RunLen)
	}
	// Split across writes, a fragment is masked as in one string.
	in := "start " + key[7:40] + " and " + key[20:] + " end"
	for _, size := range []int{1, 5, 13, len(in)} {
		var buf bytes.Buffer
		w := r.Writer(&buf)
		for i := 0; i < len(in); i += size {
			w.Write([]byte(in[i:min(i+size, len(in))]))
		}
		w.Close()
		if got, want := buf.String(), r.String(in); got != want || strings.Contains(got, key[20:32]) {
			t.Errorf("chunks of %d: wrote %q, want %q", size, got, want)
		}
	}
}

func BenchmarkString(b *testing.B) {
	r := New("sk-ant-api03-"+strings.Repeat("Ab3dEf6hIj9kLm2nOp5qRs8t", 4), token, "another-secret-value")
	text := []byte(strings.Repeat("go test ./... ok  github.com/cadre-dev/cadre/internal/redact 0.012s\n", 1000))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		r.Bytes(text)
	}
}
