package answers

import (
	"fmt"
	"strings"
	"testing"
)

// The answers kept stay within their bounds, the least recently used
// going first.
func TestCacheBounded(t *testing.T) {
	var e Cache
	for i := range MaxKept + 10 {
		e.Put(Answer{URL: fmt.Sprint(i), ETag: `"e"`, Body: []byte("x")})
		if i == MaxKept-1 {
			e.Get("0") // used lately: outlives 1 and later ones
		}
	}
	if e.order.Len() != MaxKept || len(e.byURL) != MaxKept || e.size != MaxKept {
		t.Errorf("%d kept (%d by URL, %d bytes), want %d", e.order.Len(), len(e.byURL), e.size, MaxKept)
	}
	if _, ok := e.Get("0"); !ok {
		t.Error("the answer used lately was dropped")
	}
	if _, ok := e.Get("1"); ok {
		t.Error("the least recently used answer was kept")
	}

	big := []byte(strings.Repeat("y", MaxAnswer/2))
	for i := range 2 * MaxBytes / len(big) {
		e.Put(Answer{URL: fmt.Sprint("big", i), ETag: `"e"`, Body: big})
	}
	if e.size > MaxBytes {
		t.Errorf("%d bytes kept, more than %d", e.size, MaxBytes)
	}
}

// An answer without an ETag, or too big to keep, replaces none: it drops
// the one kept before.
func TestCacheDropStale(t *testing.T) {
	var e Cache
	e.Put(Answer{URL: "u", ETag: `"1"`, Body: []byte("old")})
	e.Put(Answer{URL: "u", Body: []byte("new")})
	if _, ok := e.Get("u"); ok || e.size != 0 {
		t.Errorf("an answer without ETag left the old one kept (%d bytes)", e.size)
	}
	e.Put(Answer{URL: "u", ETag: `"1"`, Body: []byte("old")})
	e.Put(Answer{URL: "u", ETag: `"2"`, Body: make([]byte, MaxAnswer+1)})
	if _, ok := e.Get("u"); ok || e.size != 0 {
		t.Errorf("a huge answer left the old one kept (%d bytes)", e.size)
	}
}

// Written out and taken up elsewhere, the answers come back masked, only
// for the client's own API, with an older file's Link kept as a header.
func TestMarshalRoundTrip(t *testing.T) {
	var e Cache
	e.Put(Answer{URL: "https://api.example/a", ETag: `"1"`, Header: map[string]string{"Link": "<next>"}, Body: []byte("tok-secret body")})
	data, err := e.Marshal(func(s string) string { return strings.ReplaceAll(s, "tok-secret", "***") })
	if err != nil {
		t.Fatal(err)
	}
	var f Cache
	old := []byte(`[{"url":"https://api.example/b","etag":"\"2\"","link":"<page2>","body":"YQ=="},{"url":"https://elsewhere/c","etag":"\"3\"","body":""}]`)
	if err := f.Unmarshal(data, "https://api.example/"); err != nil {
		t.Fatal(err)
	}
	if err := f.Unmarshal(old, "https://api.example/"); err != nil {
		t.Fatal(err)
	}
	if a, ok := f.Get("https://api.example/a"); !ok || string(a.Body) != "*** body" || a.Header["Link"] != "<next>" {
		t.Errorf("a: %+v, %v", a, ok)
	}
	if b, ok := f.Get("https://api.example/b"); !ok || b.Header["Link"] != "<page2>" {
		t.Errorf("b from an older file: %+v, %v", b, ok)
	}
	if _, ok := f.Get("https://elsewhere/c"); ok {
		t.Error("an answer of another API was taken up")
	}
	if err := f.Unmarshal([]byte("{"), ""); err == nil {
		t.Error("damaged data was taken up")
	}
}
