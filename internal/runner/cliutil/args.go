package cliutil

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/runner"
)

// OutsideDirs lists, once each, the directories of the context and output
// files that are not inside the working tree, so a CLI that confines its
// agent to the tree can be told to let it read and write them.
func OutsideDirs(inv runner.Invocation) []string {
	var dirs []string
	for _, f := range []string{inv.ContextPath, inv.OutputPath} {
		if f == "" {
			continue
		}
		d := filepath.Dir(f)
		if inside(d, inv.Dir) || slices.Contains(dirs, d) {
			continue
		}
		dirs = append(dirs, d)
	}
	return dirs
}

func inside(path, dir string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// Flag is the arguments giving flag once for each value that is not
// empty: flag and the value, or flag+value when flag ends in "=". A runner
// appends them to its CLI's arguments.
func Flag(flag string, values ...string) []string {
	var args []string
	for _, v := range values {
		switch {
		case v == "":
		case strings.HasSuffix(flag, "="):
			args = append(args, flag+v)
		default:
			args = append(args, flag, v)
		}
	}
	return args
}

// HasFlag reports whether args hold one of the flags, alone or as
// --flag=value; a CLI that refuses a repeated option then keeps the
// settings' choice instead of cadre's.
func HasFlag(args []string, flags ...string) bool {
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if slices.Contains(flags, name) {
			return true
		}
	}
	return false
}

// CommandLine renders a command for the step log, quoting each argument a
// shell would split or expand. The prompt is shown only by its length: it
// can be long, and the log is for reading what the agent did. It is the last
// argument, written flag+prompt (flag may be empty), or, when onStdin, a
// redirection at the end of the line.
func CommandLine(cmd string, args []string, flag, prompt string, onStdin bool) string {
	elided := fmt.Sprintf("<prompt, %d bytes>", len(prompt))
	parts := []string{cmd}
	for i, a := range args {
		if !onStdin && i == len(args)-1 && a == flag+prompt {
			parts = append(parts, flag+elided)
			continue
		}
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	line := strings.Join(parts, " ")
	if onStdin {
		line += " < " + elided
	}
	return line
}
