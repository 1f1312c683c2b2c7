// Package apitest holds the fixtures the tests of the model-API runners
// share: a fake API that records what it was sent, a transport that must
// not be used, and a Getenv reading a map. What each API answers stays in
// that runner's tests.
package apitest

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Request is what a fake API received.
type Request struct {
	Header http.Header
	Path   string         // method and path, as "POST /v1/messages"
	Body   map[string]any // the JSON body
}

// Serve starts a fake API answering every request with status, headers and
// body, a JSON document (Content-Type application/json unless headers set
// another), and records the requests it got. A request whose body is not
// JSON fails the test.
func Serve(t testing.TB, status int, headers map[string]string, body string) (*httptest.Server, *[]Request) {
	t.Helper()
	var got []Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := Request{Header: r.Header.Clone(), Path: r.Method + " " + r.URL.Path}
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &c.Body); err != nil {
			t.Errorf("request body is not JSON: %v: %q", err, data)
		}
		got = append(got, c)
		w.Header().Set("Content-Type", "application/json")
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

// NoNetwork is a transport that fails the test if a request is sent at all.
type NoNetwork struct{ T testing.TB }

// RoundTrip fails the test and the request.
func (n NoNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	n.T.Errorf("request sent to %s", r.URL)
	return nil, errors.New("no network in tests")
}

// Env is a Getenv that reads vars.
func Env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}
