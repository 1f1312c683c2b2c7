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

	stdout headTail // stdout goroutine only
	tail   []byte   // stderr goroutine only
}

// read drains r until EOF or until r is closed, keeping stdout or the stderr
// tail, copying to the log and splitting lines for OnLine.
func (o *output) read(stream string, r io.Reader) {
	bp := readBufs.Get().(*[32 << 10]byte)
	defer readBufs.Put(bp)
	buf := bp[:]
	var line []byte
	var long bool // the current line passed lineMax and was already handed on
	for {
		n, err := r.Read(buf)
		if n > 0 {
			p := buf[:n]
			if stream == "stdout" {
				o.stdout.write(p)
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

// readBufs are the streams' read buffers, reused: a run starts a few
// processes per agent step (git, checks), each with two streams, and
// fresh buffers were a tenth of a run's allocated bytes.
var readBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// markerRoom is what the tail gives up for the omission marker once bytes
// were dropped; under minHeadTail bytes a cap keeps only the head, as a
// marker would not fit.
const (
	markerRoom  = 64
	minHeadTail = 4 * markerRoom
)

// headTail keeps the first and the last bytes of a stream within max bytes
// in all. An agent ends its reply with its SIGNAL BLOCK, so a flood of
// output must not push the end out; the head is kept as well because it
// usually says what the agent set out to do. Memory stays under max bytes
// however much is written.
type headTail struct {
	max   int64
	head  []byte
	ring  []byte // the last bytes; circular once it reached its size
	next  int    // where the next byte goes once the ring is full
	total int64  // bytes written
}

// sizes splits max between the head and the tail; a cap too small for the
// marker keeps only the head.
func (h *headTail) sizes() (head, tail int) {
	if h.max < minHeadTail {
		return int(max(h.max, 0)), 0
	}
	head = int(h.max-markerRoom) / 2
	return head, int(h.max) - head
}

func (h *headTail) write(p []byte) {
	h.total += int64(len(p))
	headMax, ringMax := h.sizes()
	if room := headMax - len(h.head); room > 0 {
		n := min(len(p), room)
		h.head = appendCapped(h.head, p[:n], headMax)
		p = p[n:]
	}
	if len(p) == 0 || ringMax == 0 {
		return
	}
	if len(p) >= ringMax {
		p = p[len(p)-ringMax:]
	}
	if len(h.ring) < ringMax {
		n := min(len(p), ringMax-len(h.ring))
		h.ring = appendCapped(h.ring, p[:n], ringMax)
		p = p[n:]
	}
	for len(p) > 0 {
		n := copy(h.ring[h.next:], p)
		p = p[n:]
		h.next = (h.next + n) % ringMax
	}
}

// appendCapped appends p to b, growing b as append would but never past
// limit bytes of capacity, so a buffer's memory stays within its share.
func appendCapped(b, p []byte, limit int) []byte {
	if need := len(b) + len(p); need > cap(b) {
		nb := make([]byte, len(b), min(max(2*cap(b), need, 512), limit))
		copy(nb, b)
		b = nb
	}
	return append(b, p...)
}

// truncated reports whether bytes were dropped.
func (h *headTail) truncated() bool { return h.total > int64(len(h.head)+len(h.ring)) }

// bytes returns what was kept: everything when nothing was dropped, else the
// head, a line saying how much was left out, and the tail from its first
// whole line (or whole character, when the tail holds no line break), so
// the last lines, the SIGNAL BLOCK among them, read as written.
func (h *headTail) bytes() []byte {
	tail := append(h.ring[h.next:len(h.ring):len(h.ring)], h.ring[:h.next]...)
	if !h.truncated() {
		return append(h.head, tail...)
	}
	if len(tail) == 0 {
		return h.head
	}
	// The tail gives up room for the marker, and then starts at a line.
	tail = tail[min(markerRoom, len(tail)):]
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
		tail = tail[i+1:]
	} else {
		for i := 0; i < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
			tail = tail[1:]
		}
	}
	omitted := h.total - int64(len(h.head)+len(tail))
	out := make([]byte, 0, len(h.head)+markerRoom+len(tail))
	out = append(out, h.head...)
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = fmt.Appendf(out, "[… %d bytes omitted …]\n", omitted)
	return append(out, tail...)
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
