package app

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/redact"
)

func TestRedactSinkMasksTheTokenInEveryEncoding(t *testing.T) {
	const token = "ghp_0123456789abcdefSECRET"
	var got []event.Event
	sink := redactSink(redact.New(token), []event.Sink{event.SinkFunc(func(e event.Event) { got = append(got, e) })})
	sink.Handle(event.Event{Type: event.Warning, Message: "push failed: https://x-access-token:" + token + "@github.com",
		Error: "header " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))})
	if len(got) != 1 {
		t.Fatalf("%d events", len(got))
	}
	for _, s := range []string{got[0].Message, got[0].Error} {
		if strings.Contains(s, token) || strings.Contains(s, base64.StdEncoding.EncodeToString([]byte(token))[:20]) {
			t.Errorf("token survived: %q", s)
		}
		if !strings.Contains(s, redact.Mask) {
			t.Errorf("nothing masked: %q", s)
		}
	}
}
