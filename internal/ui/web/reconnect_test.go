package web_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cadre-dev/cadre/internal/event"
)

// When the server goes away and comes back (cadre serve restarted), the
// page reconnects by itself and gets what was journaled meanwhile.
func TestStreamReconnectsAfterRestart(t *testing.T) {
	ctx := browser(t)
	j := newJournal(t)
	j.item("a", "Alpha", "running")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base, stop := serve(t, j, &recorder{}, addr)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `document.querySelector('#conn').textContent === 'live'`, 10*time.Second)
	j.emit(event.Event{Type: event.StepStarted, Item: "a", Role: "auditor", Step: "a/audit/auditor#1"})
	waitJS(t, ctx, cardColumn("a")+` === 'review'`, 10*time.Second)

	stop()
	waitJS(t, ctx, `document.querySelector('#conn').textContent.startsWith('reconnecting')`, 10*time.Second)
	// Journaled while no server runs: the page must still get it.
	j.set("a", "completed")
	j.emit(event.Event{Type: event.TaskCompleted, Item: "a", Stage: "completed"})

	base2, _ := serve(t, j, &recorder{}, addr)
	if !strings.EqualFold(base, base2) {
		t.Fatalf("restarted on %s, want %s", base2, base)
	}
	waitJS(t, ctx, `document.querySelector('#conn').textContent === 'live'`, 15*time.Second)
	waitJS(t, ctx, cardColumn("a")+` === 'completed'`, 10*time.Second)
	screenshot(t, ctx, "board-after-reconnect.png")
}
