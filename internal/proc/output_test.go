package proc

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestOutputLines(t *testing.T) {
	const limit = 8
	long := strings.Repeat("x", limit)
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{"empty", "", nil},
		{"two lines", "a\nb\n", []string{"a", "b"}},
		{"unterminated last line", "a\nb", []string{"a", "b"}},
		{"crlf", "a\r\nb\r\n", []string{"a", "b"}},
		{"blank lines", "\n\n", []string{"", ""}},
		{"long line is cut once", long + "yyy\nnext\n", []string{long, "next"}},
		{"line of exactly the limit", long + "\nnext", []string{long, "next"}},
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole": func(r io.Reader) io.Reader { return r },
		"half":  iotest.HalfReader,
		"bytes": iotest.OneByteReader,
	}
	for _, tt := range tests {
		for rname, wrap := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				var got []string
				o := &output{stdout: headTail{max: 1}, lineMax: limit, onLine: func(stream, line string) {
					if stream != "stderr" {
						t.Errorf("stream = %q, want stderr", stream)
					}
					got = append(got, line)
				}}
				o.read("stderr", wrap(strings.NewReader(tt.input)))
				if len(got) != len(tt.want) {
					t.Fatalf("got %d lines, want %d", len(got), len(tt.want))
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("lines mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestOutputStderrTail(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string
	}{
		{"short", "oops\n", "oops\n"},
		{"keeps the end", strings.Repeat("a", 5000) + "END", strings.Repeat("a", tailMax-3) + "END"},
		// 'é' is two bytes; an odd cut lands inside one and must not leave half of it.
		{"starts at a whole character", strings.Repeat("é", tailMax), strings.Repeat("é", tailMax/2)},
		{"drops a split character", "é" + strings.Repeat("b", tailMax-1), strings.Repeat("b", tailMax-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &output{}
			o.read("stderr", iotest.HalfReader(strings.NewReader(tt.input)))
			if got := o.stderrTail(); got != tt.want {
				t.Errorf("stderrTail = %q (len %d), want len %d ending %q", got, len(got), len(tt.want), tt.want[max(0, len(tt.want)-8):])
			}
		})
	}
}

func TestOutputStdoutHeadAndTail(t *testing.T) {
	const max = 1000
	headMax := (max - markerRoom) / 2
	body := func(n int) string { // numbered lines, so a lost or repeated line shows
		var b strings.Builder
		for i := 0; b.Len() < n; i++ {
			fmt.Fprintf(&b, "line %06d\n", i)
		}
		return b.String()[:n]
	}
	long := body(50_000) + "### SIGNAL BLOCK\n- Result: PASS\n"
	tests := []struct {
		name      string
		input     string
		max       int64
		want      string // exact Stdout, when set
		truncated bool
	}{
		{name: "empty", input: "", max: max, want: ""},
		{name: "under the cap", input: "hello\n", max: max, want: "hello\n"},
		{name: "exactly the cap", input: body(max), max: max, want: body(max)},
		{name: "one byte over", input: body(max + 1), max: max, truncated: true},
		{name: "flood", input: long, max: max, truncated: true},
		{name: "no line breaks", input: strings.Repeat("é", 20_000) + "END", max: max, truncated: true},
		{name: "tiny cap keeps the head", input: "abcdefgh", max: 3, want: "abc", truncated: true},
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole": func(r io.Reader) io.Reader { return r },
		"half":  iotest.HalfReader,
		"bytes": iotest.OneByteReader,
	}
	for _, tt := range tests {
		for rname, wrap := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				o := &output{stdout: headTail{max: tt.max}}
				o.read("stdout", wrap(strings.NewReader(tt.input)))
				got := string(o.stdout.bytes())
				if o.stdout.truncated() != tt.truncated {
					t.Errorf("truncated = %v, want %v", o.stdout.truncated(), tt.truncated)
				}
				if int64(len(got)) > tt.max {
					t.Errorf("kept %d bytes, over the cap of %d", len(got), tt.max)
				}
				if !tt.truncated || tt.want != "" {
					if got != tt.want {
						t.Errorf("Stdout = %q, want %q", got, tt.want)
					}
					return
				}
				at := strings.Index(got, "[… ")
				if at < 0 {
					t.Fatalf("no omission marker in %q", got)
				}
				head, rest := got[:at], got[at:]
				keptHead := len(head)
				if !strings.HasPrefix(tt.input, head) {
					keptHead-- // the line break before the marker was added
				}
				if !strings.HasPrefix(tt.input, head[:keptHead]) {
					t.Errorf("head %q is not the start of the input", head)
				}
				if keptHead < headMax-1 {
					t.Errorf("head kept %d bytes, want about %d", keptHead, headMax)
				}
				var omitted int
				if _, err := fmt.Sscanf(rest, "[… %d bytes omitted …]\n", &omitted); err != nil {
					t.Fatalf("marker %q: %v", rest[:min(len(rest), 40)], err)
				}
				_, tail, _ := strings.Cut(rest, "…]\n")
				if !strings.HasSuffix(tt.input, tail) || len(tail) < max/3 {
					t.Errorf("tail %q (%d bytes) is not the end of the input", tail, len(tail))
				}
				if !utf8.ValidString(tail) {
					t.Errorf("tail starts inside a character: %q", tail[:min(len(tail), 8)])
				}
				// Every input byte is either kept or counted as omitted.
				if keptHead+omitted+len(tail) != len(tt.input) {
					t.Errorf("head %d + omitted %d + tail %d != input %d", keptHead, omitted, len(tail), len(tt.input))
				}
			})
		}
	}
}

// TestOutputStdoutMemoryIsBounded writes far more than the cap and checks
// that the kept buffers never grow past it.
func TestOutputStdoutMemoryIsBounded(t *testing.T) {
	h := headTail{max: 4096}
	chunk := []byte(strings.Repeat("x", 777) + "\n")
	for range 10_000 {
		h.write(chunk)
		if c := cap(h.head) + cap(h.ring); c > 4096 {
			t.Fatalf("buffers hold %d bytes, over the cap of 4096", c)
		}
	}
	if got := h.bytes(); !strings.HasSuffix(string(got), string(chunk)) {
		t.Errorf("the last chunk is not at the end of %q", got[max(0, len(got)-100):])
	}
}
