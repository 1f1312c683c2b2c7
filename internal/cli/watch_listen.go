package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/webhook"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// listenReconcile is the time between passes with --listen where neither
// --interval nor poll_interval says: the webhooks wake the watch, and the
// passes only catch up with what a lost delivery left out.
const listenReconcile = 30 * time.Minute

// wakeDelay gathers the deliveries of one change (a push brings a
// synchronize, check suites and statuses) into one pass.
const wakeDelay = 300 * time.Millisecond

// deliveriesFile keeps the deliveries acted on, under the state directory.
const deliveriesFile = "webhook-deliveries.json"

// listener receives the forge's webhooks beside the watch's loop: each
// accepted delivery is said at once, queued for the next pass to journal,
// and wakes the loop.
type listener struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{} // closed when the server has stopped
	wake chan struct{} // one pending wake-up is enough

	mu    sync.Mutex
	queue []heard
	out   io.Writer
}

// heard is a delivery taken, and when.
type heard struct {
	webhook.Event
	at time.Time
}

// webhookSecret is the secret of the watched forge's webhooks, from the
// variable its webhook_secret_env names; without one --listen is refused.
func webhookSecret(cfg config.Config, getenv func(string) string) ([]byte, error) {
	key := cfg.HostKey() + ".webhook_secret_env"
	name := cfg.Host().WebhookSecretEnv
	if name == "" {
		return nil, fmt.Errorf("--listen: %s is not set: name the variable holding the webhook secret (docs/webhooks.md)", key)
	}
	secret := getenv(name)
	if secret == "" {
		return nil, fmt.Errorf("--listen: $%s (%s) is empty: set it to the webhook's secret", name, key)
	}
	return []byte(secret), nil
}

// listen starts receiving webhooks at w.opts.Listen.
func (w *watcher) listen() error {
	cfg := w.ws.cfg
	secret, err := webhookSecret(cfg, w.f.Getenv)
	if err != nil {
		return usageErr(err)
	}
	l := &listener{done: make(chan struct{}), wake: make(chan struct{}, 1), out: w.f.IO.ErrOut}
	h, err := webhook.New(webhook.Options{Forge: cfg.HostKey(), Secret: secret, Base: cfg.BaseBranch, Repo: cfg.Repository,
		StateFile: filepath.Join(w.stateDir, deliveriesFile), OnEvent: l.accept, Warn: l.say})
	if err != nil {
		return usageErr(relPath(err, w.ws.root))
	}
	ln, err := net.Listen("tcp", w.opts.Listen)
	if err != nil {
		return usageErr(fmt.Errorf("--listen %s: %w", w.opts.Listen, err))
	}
	l.addr = ln.Addr()
	l.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 64 << 10}
	go func() {
		defer close(l.done)
		if err := l.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			l.say("webhooks: " + err.Error() + "; going on by polling alone")
		}
	}()
	fmt.Fprintf(w.f.IO.ErrOut, "cadre: watch: listening for %s webhooks at http://%s%s; a pass every %s besides\n",
		cfg.HostKey(), l.addr, webhook.Path(cfg.HostKey()), w.interval)
	w.hooks = l
	return nil
}

// close stops taking deliveries, letting those being answered finish.
func (l *listener) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l.srv.Shutdown(ctx)
	<-l.done
}

// accept is the handler's OnEvent: it must not wait for the loop.
func (l *listener) accept(e webhook.Event) {
	l.say("webhook " + describeHook(e))
	l.mu.Lock()
	l.queue = append(l.queue, heard{e, time.Now()})
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// say writes a line as the watch does; deliveries come in on the
// server's goroutines.
func (l *listener) say(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.out, "cadre: watch: "+msg)
}

// take empties the queue.
func (l *listener) take() []heard {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queue
	l.queue = nil
	return q
}

// describeHook says what a delivery is about in a line.
func describeHook(e webhook.Event) string {
	parts := []string{e.Kind}
	for _, s := range []string{e.Action, e.State} {
		if s != "" && s != parts[len(parts)-1] {
			parts = append(parts, s)
		}
	}
	switch {
	case e.PR != 0:
		parts = append(parts, fmt.Sprintf("#%d", e.PR))
	case e.Issue != 0:
		parts = append(parts, fmt.Sprintf("issue #%d", e.Issue))
	}
	if e.Head != "" {
		parts = append(parts, "at "+follow.Short(e.Head))
	}
	if len(e.Labels) > 0 {
		parts = append(parts, "labels "+strings.Join(e.Labels, ","))
	}
	if e.Delivery != "" {
		parts = append(parts, "(delivery "+e.Delivery+")")
	}
	return strings.Join(parts, " ")
}

// settle waits for the deliveries that come with the one that woke the
// watch; false when the watch is to stop.
func (w *watcher) settle(ctx context.Context) bool {
	t := time.NewTimer(wakeDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// journalHooks journals the deliveries taken since the last pass, each
// as an event of the item it concerns where one is followed (its run's
// journal keeps it), else of none (said only).
func (w *watcher) journalHooks(ctx context.Context, fl *app.Following) {
	if w.hooks == nil {
		return
	}
	taken := w.hooks.take()
	if len(taken) == 0 {
		return
	}
	events := make([]webhook.Event, len(taken))
	for i, h := range taken {
		events[i] = h.Event
	}
	items, err := fl.Items(ctx)
	if err != nil {
		items = nil // said without an item; the pass reports the store's error
	}
	// What the deliveries tell is taken in for this pass, which acts on
	// it without asking again what they said.
	fl.Apply(fl.Host.Facts(events))
	tips := w.branchTips(ctx, events)
	for _, h := range taken {
		it := w.hookItem(ctx, fl, h.Event, items, tips)
		fl.Bus.Publish(event.Event{Run: it.Run, Item: it.ID, Type: event.WebhookReceived, Time: h.at.UTC(), Message: h.Forge + " " + describeHook(h.Event)})
	}
}

// hookItem is the followed item a delivery concerns: by its pull
// request, by the head its branch is at, or by its issue's item.
func (w *watcher) hookItem(ctx context.Context, fl *app.Following, e webhook.Event, items []follow.Item, tips map[string]string) follow.Item {
	for _, it := range items {
		if e.PR != 0 && it.PR == e.PR || e.PR == 0 && e.Head != "" && tips[it.Branch] == e.Head {
			return it
		}
	}
	if e.Issue != 0 {
		id := intake.IssueItemID(w.ws.cfg.Repository, codehost.Issue{Repo: e.Repo, Number: e.Issue})
		if run, err := fl.Store.LatestRunOf(ctx, id); err == nil {
			return follow.Item{Run: run, ID: id}
		}
	}
	return follow.Item{}
}

// branchTips maps the local and fetched branches to their commits, when a
// delivery names a head but no pull request (a status, a job).
func (w *watcher) branchTips(ctx context.Context, events []webhook.Event) map[string]string {
	need := false
	for _, e := range events {
		need = need || e.PR == 0 && e.Head != ""
	}
	if !need {
		return nil
	}
	repo, err := workspace.Open(ctx, w.ws.root)
	if err != nil {
		return nil
	}
	out, err := repo.Git(ctx, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/", "refs/remotes/origin/")
	if err != nil {
		return nil
	}
	tips := map[string]string{}
	for line := range strings.Lines(out) {
		sha, ref, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		if b, ok := strings.CutPrefix(ref, "refs/remotes/origin/"); ok {
			tips[b] = sha // the pushed tip, over a local one
		} else if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok && tips[b] == "" {
			tips[b] = sha
		}
	}
	return tips
}
