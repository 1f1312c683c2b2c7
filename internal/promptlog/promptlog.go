// Package promptlog keeps what an item's agents were asked: every agent
// step's whole prompt, instructions included, appended to one file of the
// item's directory in the order the steps ran, and read back by step.
package promptlog

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/safefile"
)

// File is the file of an item's directory that keeps what its agents
// were asked: every agent step's whole prompt, instructions included, in the
// order the steps ran. One file appended per step rather than a file per
// step: creating a file is the dearest thing cadre does for a step on some
// file systems, and an append allocates nothing.
const File = "prompts.md"

// promptMark starts the header line of each prompt in File:
//
//	<!-- cadre prompt 1234 bytes "analysis-issue-analyst-1" -->
//
// then the prompt's bytes and a newline. The length, not a closing line,
// ends a prompt, so a prompt quoting an issue's text cannot forge one.
const promptMark = "<!-- cadre prompt "

// Append adds a step's prompt to the item's prompts file in dir, in one
// write: parallel steps of an item append whole prompts, never interleaved.
func Append(dir, stem, text string) error {
	var b bytes.Buffer
	b.Grow(len(text) + len(stem) + 48)
	b.WriteString(promptMark)
	b.WriteString(strconv.Itoa(len(text)))
	b.WriteString(" bytes ")
	b.WriteString(strconv.Quote(stem))
	b.WriteString(" -->\n")
	b.WriteString(text)
	b.WriteByte('\n')
	path := filepath.Join(dir, File)
	f, err := safefile.OpenAppend(dir, path, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		f, err = safefile.OpenAppend(dir, path, 0o644)
	}
	if err != nil {
		return fmt.Errorf("write prompt: %w", err)
	}
	_, err = f.Write(b.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write prompt: %w", err)
	}
	return nil
}

// Read reads an item's prompts file (itemDir is the item's run
// directory): the latest prompt of each step, by the step's file stem (the
// name its output, context and log files share). A step run again after a
// resume has its prompt twice; the later one is what its agent was asked
// last. A missing file is no prompts; a prompt torn by a crash mid-write
// is left out, and those appended after it are read.
func Read(itemDir string) (map[string]string, error) {
	data, err := safefile.ReadFile(itemDir, filepath.Join(itemDir, File))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read prompts: %w", err)
	}
	out := Parse(data)
	// Runs journaled before prompts shared one file kept one file per
	// step, prompts/<stem>.md.
	old, _ := os.ReadDir(filepath.Join(itemDir, "prompts"))
	for _, f := range old {
		stem, ok := strings.CutSuffix(f.Name(), ".md")
		if _, had := out[stem]; !ok || had {
			continue
		}
		if text, err := safefile.ReadFile(itemDir, filepath.Join(itemDir, "prompts", f.Name())); err == nil {
			out[stem] = string(text)
		}
	}
	return out, nil
}

// Parse reads the prompts of a prompts file's data: the latest prompt of
// each step, by the step's file stem.
func Parse(data []byte) map[string]string {
	out := map[string]string{}
	for len(data) > 0 {
		stem, text, rest, ok := nextPrompt(data)
		if !ok {
			// A prompt torn by a crash, with later ones appended after
			// it: go on from the next line that starts a prompt. Only
			// a torn prompt's text is searched so; a whole one is
			// skipped by its length, whatever it quotes.
			i := bytes.Index(data[1:], []byte("\n"+promptMark))
			if i < 0 {
				break
			}
			data = data[i+2:]
			continue
		}
		out[stem] = text
		data = rest
	}
	return out
}

// nextPrompt reads the prompt data starts with.
func nextPrompt(data []byte) (stem, text string, rest []byte, ok bool) {
	line, rest, ok := bytes.Cut(data, []byte{'\n'})
	if !ok || !bytes.HasPrefix(line, []byte(promptMark)) {
		return "", "", nil, false
	}
	num, head, ok := strings.Cut(string(line[len(promptMark):]), " bytes ")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 0 || n >= len(rest) || rest[n] != '\n' {
		return "", "", nil, false
	}
	quoted, err := strconv.QuotedPrefix(head)
	if err != nil || head[len(quoted):] != " -->" {
		return "", "", nil, false
	}
	stem, _ = strconv.Unquote(quoted)
	return stem, string(rest[:n]), rest[n+1:], true
}
