package forgetest

import (
	"encoding/json"
	"strings"
)

// SetRateLimit sets the quota the fake reports in x-ratelimit-remaining
// and x-ratelimit-limit (5000 of 5000 at the start); each request then
// spends one, as on GitHub.
func (s *Server) SetRateLimit(remaining, limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remaining, s.limit = remaining, limit
}

// resource names what a write changes, as a client must serialise it: an
// issue or pull request by number (they share numbers; comments and labels
// belong to it), or a pull request being created by its head branch.
func resource(path string, body []byte) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) >= 5 && parts[0] == "repos" && (parts[3] == "issues" || parts[3] == "pulls") {
		return parts[1] + "/" + parts[2] + "#" + parts[4]
	}
	if len(parts) == 4 && parts[0] == "repos" && parts[3] == "pulls" {
		var in struct {
			Head string `json:"head"`
		}
		_ = json.Unmarshal(body, &in)
		return parts[1] + "/" + parts[2] + "@" + in.Head
	}
	return path
}

func (s *Server) enterWrite(res string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writing++
	s.maxWrites = max(s.maxWrites, s.writing)
	s.inflight[res]++
	s.maxSame = max(s.maxSame, s.inflight[res])
}

func (s *Server) leaveWrite(res string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writing--
	if s.inflight[res]--; s.inflight[res] == 0 {
		delete(s.inflight, res)
	}
}

// MaxParallelWritesToOne returns the most mutating requests that were ever
// being served at once for one resource: an issue or pull request number,
// or the head branch of a pull request being created.
func (s *Server) MaxParallelWritesToOne() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxSame
}

// hold keeps writes in flight until released.
type hold struct {
	arrived chan Call
	release chan struct{}
}

// HoldWrites makes every write from now on wait, counted in flight, before
// it is served, until ReleaseWrites (or Close). Each one is reported on
// the returned channel as it arrives (method, path and body), so a test
// can see which writes a client has in flight at once without timing it.
// The channel holds 1024 reports; later ones are dropped.
func (s *Server) HoldWrites() <-chan Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = &hold{arrived: make(chan Call, 1024), release: make(chan struct{})}
	return s.hold.arrived
}

// ReleaseWrites lets the held writes, and later ones, through.
func (s *Server) ReleaseWrites() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hold != nil {
		close(s.hold.release)
		s.hold = nil
	}
}

func (s *Server) waitHold(c Call) {
	s.mu.Lock()
	h := s.hold
	s.mu.Unlock()
	if h == nil {
		return
	}
	select {
	case h.arrived <- c:
	default:
	}
	<-h.release
}
