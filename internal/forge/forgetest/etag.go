package forgetest

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"strings"
)

// withETag adds to header the ETag of body: a weak validator, as GitHub
// gives its JSON, that changes whenever the body does.
func withETag(header map[string]string, body []byte) map[string]string {
	sum := sha256.Sum256(body)
	h := maps.Clone(header)
	if h == nil {
		h = map[string]string{}
	}
	h["ETag"] = `W/"` + hex.EncodeToString(sum[:20]) + `"`
	return h
}

// notModified reports whether an If-None-Match header names etag. The
// comparison is weak (RFC 9110 §13.1.2): a W/ prefix on either side is
// ignored, and "*" matches anything.
func notModified(ifNoneMatch, etag string) bool {
	if ifNoneMatch == "" || etag == "" {
		return false
	}
	want := strings.TrimPrefix(etag, "W/")
	for tag := range strings.SplitSeq(ifNoneMatch, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == want {
			return true
		}
	}
	return false
}

// Tally counts the requests the fake received.
type Tally struct {
	Requests    int // every request, whatever its answer
	NotModified int // conditional GETs answered 304, which cost no quota on GitHub
	Downloads   int // fetches from a signed download link (a job's log), not API calls
}

// Charged is how many requests count against the rate limit: all but the
// 304s and the downloads.
func (t Tally) Charged() int { return t.Requests - t.NotModified - t.Downloads }

// Counts tallies the requests received so far.
func (s *Server) Counts() Tally {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Tally{Requests: len(s.calls), NotModified: s.notModified, Downloads: s.downloads}
}
