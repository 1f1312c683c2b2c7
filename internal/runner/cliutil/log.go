package cliutil

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/safefile"
)

// OpenLog opens the step's transcript for appending (a re-ask adds to it),
// creating its directory; an empty path means a step without a log. A
// link in its place (an agent's, from an earlier ask) is refused, not
// appended through. What is written is masked of mask's secrets (see
// runner.Invocation.Mask); Close writes what the mask held back.
func OpenLog(path string, mask *redact.Redactor) (io.WriteCloser, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	f, err := safefile.OpenAppend(filepath.Dir(path), path, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open step log: %w", err)
	}
	if !mask.Enabled() {
		return f, nil
	}
	return &maskedLog{w: mask.Writer(f), f: f}, nil
}

// maskedLog is a step log whose writes are masked. Its writes are
// serialised: a runner may log from more than one goroutine.
type maskedLog struct {
	mu sync.Mutex
	w  *redact.Writer
	f  *os.File
}

func (l *maskedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close writes what the mask held back and closes the file.
func (l *maskedLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.w.Flush()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
