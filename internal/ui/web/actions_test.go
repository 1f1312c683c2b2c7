package web_test

import (
	"net/http"
	"strings"
	"testing"
)

// The buttons' endpoints refuse a request without the board's token, so a
// page of another site (or anyone reaching the port) cannot approve work
// or stop a run.
func TestActionsNeedTheToken(t *testing.T) {
	j := newJournal(t)
	j.item("a", "A", "paused")
	rec := &recorder{}
	base, _ := serve(t, j, rec, "127.0.0.1:0")
	approve := base + "/api/runs/" + j.run + "/items/a/approve"
	stop := base + "/api/runs/" + j.run + "/stop"
	for _, tt := range []struct {
		name, url, auth string
		want            int
	}{
		{"approve without token", approve, "", http.StatusForbidden},
		{"approve with a wrong token", approve, "Bearer " + strings.Repeat("x", len(testToken)), http.StatusForbidden},
		{"approve with the token in another scheme", approve, "Basic " + testToken, http.StatusForbidden},
		{"stop without token", stop, "", http.StatusForbidden},
		{"stop with a wrong token", stop, "Bearer nope", http.StatusForbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := post(t, tt.url, tt.auth); got != tt.want {
				t.Errorf("status %d, want %d", got, tt.want)
			}
		})
	}
	if a, s := rec.calls(); a != 0 || s != 0 {
		t.Fatalf("refused requests reached the actions: %d approvals, %d stops", a, s)
	}
	if got := post(t, approve, "Bearer "+testToken); got != http.StatusOK {
		t.Errorf("approve with the token: status %d, want 200", got)
	}
	if got := post(t, stop, "Bearer "+testToken); got != http.StatusOK {
		t.Errorf("stop with the token: status %d, want 200", got)
	}
	if a, s := rec.calls(); a != 1 || s != 1 {
		t.Errorf("with the token: %d approvals, %d stops, want 1 and 1", a, s)
	}
}

// The event stream and the other reads take no action: a POST to them is
// refused whatever the token.
func TestStreamIsReadOnly(t *testing.T) {
	j := newJournal(t)
	base, _ := serve(t, j, &recorder{}, "127.0.0.1:0")
	if got := post(t, base+"/api/events", "Bearer "+testToken); got != http.StatusMethodNotAllowed {
		t.Errorf("POST /api/events: status %d, want 405", got)
	}
}

// A name that rebinds to 127.0.0.1 is not the board's: refused.
func TestForeignHostRefused(t *testing.T) {
	j := newJournal(t)
	base, _ := serve(t, j, &recorder{}, "127.0.0.1:0")
	req, _ := http.NewRequest(http.MethodGet, base+"/api/runs", nil)
	req.Host = "attacker.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("status %d, want 421", resp.StatusCode)
	}
}

func post(t *testing.T, url, auth string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"approve":true}`))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
