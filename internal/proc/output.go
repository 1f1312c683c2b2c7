package proc

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
)

const (
	// tailMax bounds Result.StderrTail: enough for the last few lines of an
	// error report without carrying a whole crash log into messages.
	tailMax = 2 << 10
	// lineMax bounds one line handed to OnLine so a stream without newlines
	// cannot grow memory without limit; the rest of such a line is dropped.
	lineMax = 1 << 20
)

// output collects what a process writes. Each stream has its own reader
// goroutine; the log and OnLine are shared, so they are serialized by mu.
type output struct {
	mu        sync.Mutex
	log       io.Writer // nil once capped or after a write error
	logMax    int64
	logN      int64
	logLastNL bool
	onLine    func(stream, line string)
	lineMax   int // per-line limit; 0 means the lineMax constant

	stdout    []byte // stdout goroutine only
	stdoutMax int64
	truncated bool
	tail      []byte // stderr goroutine only
}

// read drains r until EOF or until r is closed, keeping stdout or the stderr
// tail, copying to the log and splitting lines for OnLine.
func (o *output) read(stream string, r io.Reader) {
	buf := make([]byte, 32<<10)
	var line []byte
	var long bool // the current line passed lineMax and was already handed on
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p := buf[:n]
			if stream == "stdout" {
				o.keepStdout(p)
			} else {
				o.keepTail(p)
			}
			o.writeLog(p)
			if o.onLine != nil {
				line, long = o.lines(stream, line, long, p)
			}
		}
		if err != nil {
			break
		}
	}
	if o.onLine != nil && len(line) > 0 && !long {
		o.emit(stream, line)
	}
}

func (o *output) keepStdout(p []byte) {
	room := o.stdoutMax - int64(len(o.stdout))
	if int64(len(p)) > room {
		p = p[:max(room, 0)]
		o.truncated = true
	}
	o.stdout = append(o.stdout, p...)
}

func (o *output) keepTail(p []byte) {
	o.tail = append(o.tail, p...)
	if len(o.tail) > tailMax {
		o.tail = o.tail[len(o.tail)-tailMax:]
	}
}

// stderrTail returns the kept tail, starting at a whole UTF-8 character.
func (o *output) stderrTail() string {
	t := o.tail
	for i := 0; i < utf8.UTFMax && len(t) > 0 && !utf8.RuneStart(t[0]); i++ {
		t = t[1:]
	}
	return string(t)
}

// writeLog copies p to the log up to logMax bytes, then writes one closing
// line saying the output was cut. A failing log is dropped rather than
// failing the run: the agent's work matters more than its transcript.
func (o *output) writeLog(p []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.log == nil {
		return
	}
	room := o.logMax - o.logN
	capped := int64(len(p)) > room
	if capped {
		p = p[:max(room, 0)]
	}
	if len(p) > 0 {
		if _, err := o.log.Write(p); err != nil {
			o.log = nil
			return
		}
		o.logN += int64(len(p))
		o.logLastNL = p[len(p)-1] == '\n'
	}
	if capped {
		msg := fmt.Sprintf("[output truncated after %d bytes]\n", o.logN)
		if o.logN > 0 && !o.logLastNL {
			msg = "\n" + msg
		}
		_, _ = io.WriteString(o.log, msg) // best effort: the log is closed for writing either way
		o.log = nil
	}
}

// lines appends p to the pending line and hands every completed line to
// OnLine, returning the new pending line.
func (o *output) lines(stream string, line []byte, long bool, p []byte) ([]byte, bool) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !long {
			limit := cmp.Or(o.lineMax, lineMax)
			line = append(line, chunk[:min(len(chunk), limit-len(line))]...)
			if len(line) >= limit {
				o.emit(stream, line)
				long = true
			}
		}
		if i < 0 {
			break
		}
		if !long {
			o.emit(stream, line)
		}
		line, long = line[:0], false
		p = p[i+1:]
	}
	return line, long
}

func (o *output) emit(stream string, line []byte) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	o.mu.Lock()
	defer o.mu.Unlock()
	o.onLine(stream, string(line))
}
