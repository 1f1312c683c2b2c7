package workspace

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"os"
	"path/filepath"
	"strings"
)

// aheadWalk bounds the commits Ahead reads itself before asking git.
const aheadWalk = 64

// Ahead says whether HEAD has commits base does not. A branch cadre has
// just committed to is answered without a git process: HEAD at base's tip
// has none, and one whose history reaches base's tip through the commits
// cadre wrote (loose objects) has some. Anything else is asked of git.
func (r *Repo) Ahead(ctx context.Context, base string) (bool, error) {
	if ahead, ok := r.aheadLoose(ctx, base); ok {
		return ahead, nil
	}
	n, err := r.CommitsAhead(ctx, base)
	return n > 0, err
}

// aheadLoose is Ahead from the refs and loose commits alone; ok is false
// when they do not tell.
func (r *Repo) aheadLoose(ctx context.Context, base string) (ahead, ok bool) {
	head, tip, ok := r.headAndTip(ctx, base)
	if !ok {
		return false, false
	}
	if head == tip {
		return false, true
	}
	common, _, err := r.gitDirs(ctx)
	if err != nil {
		return false, false
	}
	// Breadth first through every parent: tip among HEAD's ancestors
	// means HEAD has at least itself that base lacks.
	queue, seen := []string{head}, map[string]bool{head: true}
	for len(queue) > 0 && len(seen) <= aheadWalk {
		id := queue[0]
		queue = queue[1:]
		parents, ok := looseParents(common, id)
		if !ok {
			return false, false
		}
		for _, p := range parents {
			if p == tip {
				return true, true
			}
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false, false
}

// looseParents reads the parents of commit id from its loose object in the
// object directory under common; false when it is not loose or not a
// commit.
func looseParents(common, id string) ([]string, bool) {
	f, err := os.Open(filepath.Join(common, "objects", id[:2], id[2:]))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	zr, err := zlib.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, false
	}
	defer zr.Close()
	br := bufio.NewReader(zr)
	header, err := br.ReadString(0)
	if err != nil || !strings.HasPrefix(header, "commit ") {
		return nil, false
	}
	var parents []string
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return nil, false
		}
		line = bytes.TrimSuffix(line, []byte{'\n'})
		if len(line) == 0 {
			return parents, true // the end of the headers
		}
		if p, ok := bytes.CutPrefix(line, []byte("parent ")); ok {
			if !isObjectID(string(p)) {
				return nil, false
			}
			parents = append(parents, string(p))
		}
	}
}
