package forge

import (
	"fmt"
	"strings"
	"testing"
)

// The answers kept stay within their bounds, the least recently used
// going first.
func TestEtagsBounded(t *testing.T) {
	var e etags
	for i := range maxKept + 10 {
		e.put(kept{url: fmt.Sprint(i), etag: `"e"`, body: []byte("x")})
		if i == maxKept-1 {
			e.get("0") // used lately: outlives 1 and later ones
		}
	}
	if e.order.Len() != maxKept || len(e.byURL) != maxKept || e.size != maxKept {
		t.Errorf("%d kept (%d by URL, %d bytes), want %d", e.order.Len(), len(e.byURL), e.size, maxKept)
	}
	if _, ok := e.get("0"); !ok {
		t.Error("the answer used lately was dropped")
	}
	if _, ok := e.get("1"); ok {
		t.Error("the least recently used answer was kept")
	}

	big := []byte(strings.Repeat("y", maxKeptAnswer/2))
	for i := range 2 * maxKeptBytes / len(big) {
		e.put(kept{url: fmt.Sprint("big", i), etag: `"e"`, body: big})
	}
	if e.size > maxKeptBytes {
		t.Errorf("%d bytes kept, more than %d", e.size, maxKeptBytes)
	}
}

// An answer without an ETag, or too big to keep, replaces none: it drops
// the one kept before.
func TestEtagsDropStale(t *testing.T) {
	var e etags
	e.put(kept{url: "u", etag: `"1"`, body: []byte("old")})
	e.put(kept{url: "u", body: []byte("new")})
	if _, ok := e.get("u"); ok || e.size != 0 {
		t.Errorf("an answer without ETag left the old one kept (%d bytes)", e.size)
	}
	e.put(kept{url: "u", etag: `"1"`, body: []byte("old")})
	e.put(kept{url: "u", etag: `"2"`, body: make([]byte, maxKeptAnswer+1)})
	if _, ok := e.get("u"); ok || e.size != 0 {
		t.Errorf("a huge answer left the old one kept (%d bytes)", e.size)
	}
}
