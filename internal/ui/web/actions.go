package web

import (
	"encoding/json"

	"io"
	"net/http"
)

type approveRequest struct {
	Approve bool   `json:"approve"`
	Note    string `json:"note"`
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request, rp *repo) {
	if rp.Actions == nil {
		http.Error(w, "this board is read-only", http.StatusNotImplemented)
		return
	}
	var req approveRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
		http.Error(w, "want a JSON body {\"approve\": true|false, \"note\": \"…\"}", http.StatusBadRequest)
		return
	}
	if err := rp.Actions.Approve(r.Context(), r.PathValue("run"), r.PathValue("item"), req.Approve, req.Note); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, map[string]string{"status": "answered"})
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request, rp *repo) {
	if rp.Actions == nil {
		http.Error(w, "this board is read-only", http.StatusNotImplemented)
		return
	}
	if err := rp.Actions.Stop(r.Context(), r.PathValue("run")); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, map[string]string{"status": "stopping"})
}
