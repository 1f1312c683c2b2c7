package workspace

import (
	"bytes"
	"compress/zlib"
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"
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
	data, err := os.ReadFile(filepath.Join(common, "objects", id[:2], id[2:]))
	if err != nil {
		return nil, false
	}
	// A commit's parents are in its first lines, whatever its message.
	var head [4096]byte
	n, ok := inflateHead(data, head[:])
	if !ok {
		return nil, false
	}
	header, body, ok := bytes.Cut(head[:n], []byte{0})
	if !ok || !bytes.HasPrefix(header, []byte("commit ")) {
		return nil, false
	}
	var parents []string
	for {
		line, rest, ok := bytes.Cut(body, []byte{'\n'})
		if !ok {
			return nil, false // the headers run past what was read
		}
		if len(line) == 0 || bytes.HasPrefix(line, []byte("author ")) {
			// The parents follow the tree and come before the author (and
			// a signature, which may be long).
			return parents, true
		}
		if p, ok := bytes.CutPrefix(line, []byte("parent ")); ok {
			if !isObjectID(string(p)) {
				return nil, false
			}
			parents = append(parents, string(p))
		}
		body = rest
	}
}

// inflaters keeps zlib readers for reuse: each holds a 32 KB window.
var inflaters sync.Pool

// inflateHead inflates the start of the zlib stream data into buf,
// returning how much it filled.
func inflateHead(data, buf []byte) (int, bool) {
	src := bytes.NewReader(data)
	zr, _ := inflaters.Get().(io.ReadCloser)
	if zr == nil {
		var err error
		if zr, err = zlib.NewReader(src); err != nil {
			return 0, false
		}
	} else if err := zr.(zlib.Resetter).Reset(src, nil); err != nil {
		return 0, false
	}
	defer inflaters.Put(zr)
	n, err := io.ReadFull(zr, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return 0, false
	}
	return n, true
}
