package workspace

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
)

// ConflictMarkers lists the conflict-marker lines, as "path:line: text",
// that commit to added since commit from: what a merge left unresolved.
// A `<<<<<<< ` or `>>>>>>> ` line counts wherever it is, a `=======` or
// `||||||| ` line only after a `<<<<<<< `. With others (the base merged
// in), a line must be new to each of them too: the base's own files may
// hold such lines on purpose (a test of a merge tool), and it did not
// come from the merge. No diff driver of the tree runs.
func (r *Repo) ConflictMarkers(ctx context.Context, from, to string, others ...string) ([]string, error) {
	found, order, err := r.addedMarkers(ctx, from, to)
	if err != nil || len(found) == 0 {
		return nil, err
	}
	for _, o := range others {
		also, _, err := r.addedMarkers(ctx, o, to)
		if err != nil {
			return nil, err
		}
		for k := range found {
			if !also[k] {
				delete(found, k)
			}
		}
	}
	var out []string
	for _, k := range order {
		if found[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// addedMarkers scans the lines to added since from for conflict markers,
// keyed "path:line: text" by their place in to.
func (r *Repo) addedMarkers(ctx context.Context, from, to string) (map[string]bool, []string, error) {
	for _, c := range []string{from, to} {
		if !isObjectID(c) {
			return nil, nil, fmt.Errorf("conflict markers: %q is not a commit id", c)
		}
	}
	diff, err := r.Untrusted().Git(ctx, "-c", "core.quotePath=false", "diff", "--no-color", "--no-ext-diff", "--no-textconv",
		"--no-renames", "-U0", from, to, "--")
	if err != nil {
		return nil, nil, fmt.Errorf("conflict markers: %w", err)
	}
	found := map[string]bool{}
	var order []string
	var path string
	line, open := 0, false
	sc := bufio.NewScanner(strings.NewReader(diff))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "+++ "):
			path, open = strings.TrimPrefix(strings.TrimPrefix(l, "+++ "), "b/"), false
		case strings.HasPrefix(l, "@@ "):
			line = hunkStart(l)
		case strings.HasPrefix(l, "+"):
			text := strings.TrimSuffix(l[1:], "\r")
			if isMarker(text, open) {
				k := path + ":" + strconv.Itoa(line) + ": " + text
				found[k] = true
				order = append(order, k)
			}
			switch {
			case strings.HasPrefix(text, "<<<<<<< ") || text == "<<<<<<<":
				open = true
			case strings.HasPrefix(text, ">>>>>>> ") || text == ">>>>>>>":
				open = false
			}
			line++
		}
	}
	return found, order, sc.Err()
}

// isMarker says whether text is a conflict marker line; open says a
// `<<<<<<<` came before it in the file.
func isMarker(text string, open bool) bool {
	for _, m := range []string{"<<<<<<<", ">>>>>>>"} {
		if text == m || strings.HasPrefix(text, m+" ") {
			return true
		}
	}
	return open && (text == "=======" || text == "|||||||" || strings.HasPrefix(text, "||||||| "))
}

// hunkStart is the first line of a hunk's new side: "@@ -a,b +c,d @@".
func hunkStart(h string) int {
	f := strings.Fields(h)
	if len(f) < 3 || !strings.HasPrefix(f[2], "+") {
		return 0
	}
	n, _ := strconv.Atoi(strings.SplitN(f[2][1:], ",", 2)[0])
	return n
}
