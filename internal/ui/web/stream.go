package web

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// events streams the journal's events as Server-Sent Events: those after
// ?after= (or the Last-Event-ID a reconnecting EventSource sends), then
// new ones as they are journaled. ?run= limits it to one run. The stream
// only reads.
func (s *Server) events(w http.ResponseWriter, r *http.Request, rp *repo) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ctx := r.Context()
	run := r.URL.Query().Get("run")
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if id, err := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64); err == nil {
		after = id
	}
	// Subscribe before catching up, so nothing journaled in between is
	// missed; what comes twice is skipped by its sequence number.
	sub := rp.hub.subscribe(run)
	defer rp.hub.unsubscribe(sub)
	past, _, err := rp.Store.Events(ctx, run, after)
	if err != nil {
		fail(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n") // reconnect a second after the server went away
	sent := after
	for _, e := range past {
		m := encode(e)
		writeMessage(w, m)
		sent = m.seq
	}
	fl.Flush()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
			fl.Flush()
		case m, ok := <-sub.ch:
			if !ok {
				return // too far behind, or shutting down: the page reconnects
			}
			if m.seq <= sent {
				continue
			}
			writeMessage(w, m)
			sent = m.seq
			// Send what else is queued before flushing: one write for a burst.
			for more := true; more; {
				select {
				case m, ok := <-sub.ch:
					if !ok {
						fl.Flush()
						return
					}
					if m.seq > sent {
						writeMessage(w, m)
						sent = m.seq
					}
				default:
					more = false
				}
			}
			fl.Flush()
		}
	}
}

func writeMessage(w http.ResponseWriter, m message) {
	fmt.Fprintf(w, "id: %d\ndata: %s\n\n", m.seq, m.data)
}
