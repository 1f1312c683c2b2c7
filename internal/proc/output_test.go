package proc

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"

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
				o := &output{stdoutMax: 1, lineMax: limit, onLine: func(stream, line string) {
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
