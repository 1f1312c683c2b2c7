package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/ui/web"
)

// twoRepos serves a board of two journals: alpha with item a running in
// its run, beta with item b paused in another run.
func twoRepos(t *testing.T) (base string, alpha, beta *journal, ra, rb *recorder) {
	t.Helper()
	alpha, beta = newJournalOf(t, "20261124-100000-aaaa"), newJournalOf(t, "20261125-110000-bbbb")
	alpha.item("a", "Alpha task", "running")
	beta.item("b", "Beta task", "paused")
	ra, rb = &recorder{}, &recorder{}
	base = serveRepos(t,
		web.Repo{Name: "alpha", Dir: alpha.dir, Store: alpha.st, Actions: ra},
		web.Repo{Name: "Beta Repo", Dir: beta.dir, Store: beta.st, Actions: rb})
	return base, alpha, beta, ra, rb
}

type repoInfo struct {
	Key, Name, Dir string
	Runs           int
}

// Each repository's runs, items and actions are its own, reached by the
// key the board gave it; a key it did not give is 404.
func TestBoardOfSeveralRepositories(t *testing.T) {
	base, alpha, beta, ra, rb := twoRepos(t)

	var repos []repoInfo
	getJSON(t, base+"/api/repos", http.StatusOK, &repos)
	if len(repos) != 2 || repos[0].Key != "alpha" || repos[1].Key != "beta-repo" || repos[1].Name != "Beta Repo" || repos[1].Dir != beta.dir {
		t.Fatalf("repos = %+v, want alpha and beta-repo in order", repos)
	}
	for _, tt := range []struct {
		key string
		j   *journal
	}{{"alpha", alpha}, {"beta-repo", beta}} {
		var runs []struct{ ID string }
		getJSON(t, base+"/api/repos/"+tt.key+"/runs", http.StatusOK, &runs)
		if len(runs) != 1 || runs[0].ID != tt.j.run {
			t.Errorf("runs of %s = %+v, want only %s", tt.key, runs, tt.j.run)
		}
	}
	// Without a key: the first repository, as on a board of one.
	var runs []struct{ ID string }
	getJSON(t, base+"/api/runs", http.StatusOK, &runs)
	if len(runs) != 1 || runs[0].ID != alpha.run {
		t.Errorf("/api/runs = %+v, want the first repository's %s", runs, alpha.run)
	}

	var board struct{ Items []struct{ ID, Column string } }
	getJSON(t, base+"/api/repos/beta-repo/runs/"+beta.run, http.StatusOK, &board)
	if len(board.Items) != 1 || board.Items[0].ID != "b" || board.Items[0].Column != "paused" {
		t.Errorf("board of beta's run = %+v, want b paused", board.Items)
	}
	// A run is looked up in its own repository's journal only.
	getJSON(t, base+"/api/repos/alpha/runs/"+beta.run, http.StatusNotFound, nil)

	for _, url := range []string{
		"/api/repos/gamma/runs",
		"/api/repos/0/runs",
		"/api/repos/..%2F..%2Fetc/runs",
		"/api/repos/%2Ftmp/runs/" + alpha.run,
		"/api/repos/ALPHA/events",
	} {
		getJSON(t, base+url, http.StatusNotFound, nil)
	}
	if got := post(t, base+"/api/repos/gamma/runs/"+beta.run+"/items/b/approve", "Bearer "+testToken); got != http.StatusNotFound {
		t.Errorf("approve in an unknown repository: status %d, want 404", got)
	}

	if got := post(t, base+"/api/repos/beta-repo/runs/"+beta.run+"/items/b/approve", "Bearer "+testToken); got != http.StatusOK {
		t.Fatalf("approve in beta: status %d, want 200", got)
	}
	if got := post(t, base+"/api/repos/alpha/runs/"+alpha.run+"/stop", "Bearer "+testToken); got != http.StatusOK {
		t.Fatalf("stop in alpha: status %d, want 200", got)
	}
	if approved, stopped := rb.log(); !slices.Equal(approved, []string{beta.run + "/b"}) || len(stopped) != 0 {
		t.Errorf("beta's actions: approved %v, stopped %v; want only %s/b approved", approved, stopped, beta.run)
	}
	if approved, stopped := ra.log(); !slices.Equal(stopped, []string{alpha.run}) || len(approved) != 0 {
		t.Errorf("alpha's actions: approved %v, stopped %v; want only %s stopped", approved, stopped, alpha.run)
	}
}

// An event journaled in one repository reaches that repository's stream
// and not the other's.
func TestStreamsArePerRepository(t *testing.T) {
	base, alpha, beta, _, _ := twoRepos(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang fails, it does not block
	defer cancel()
	fromAlpha, fromBeta := openStream(t, ctx, base+"/api/repos/alpha/events"), openStream(t, ctx, base+"/api/repos/beta-repo/events")

	beta.emit(event.Event{Type: event.StepStarted, Item: "b", Role: "beta-marker"})
	if e := next(t, ctx, fromBeta); e.Run != beta.run || e.Role != "beta-marker" {
		t.Fatalf("beta's stream got %+v, want beta's event", e)
	}
	// Beta's event has been fanned out; now one of alpha's. Alpha's stream
	// must show alpha's event first: beta's never comes in it.
	alpha.emit(event.Event{Type: event.StepStarted, Item: "a", Role: "alpha-marker"})
	if e := next(t, ctx, fromAlpha); e.Run != alpha.run || e.Role != "alpha-marker" {
		t.Fatalf("alpha's stream got %+v, want alpha's event only", e)
	}
	beta.emit(event.Event{Type: event.TaskCompleted, Item: "b"})
	if e := next(t, ctx, fromBeta); e.Run != beta.run || e.Type != event.TaskCompleted {
		t.Fatalf("beta's stream got %+v, want beta's second event (not alpha's)", e)
	}
}

type streamed struct {
	Seq  int64
	Run  string
	Type string
	Item string
	Role string
}

// openStream reads an event stream's events into a channel until ctx ends.
func openStream(t *testing.T, ctx context.Context, url string) <-chan streamed {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
	out := make(chan streamed, 64)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var e streamed
			if err := json.Unmarshal([]byte(data), &e); err == nil {
				out <- e
			}
		}
	}()
	return out
}

func next(t *testing.T, ctx context.Context, ch <-chan streamed) streamed {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("the stream ended")
		}
		return e
	case <-ctx.Done():
		t.Fatal("no event came")
	}
	return streamed{}
}

func getJSON(t *testing.T, url string, want int, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("GET %s: status %d, want %d", url, resp.StatusCode, want)
	}
	if v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
}

// In Chromium: a board of two repositories opens on the first; picking
// the second in the repository picker shows its run's cards, which then
// move live with its journal.
func TestBrowserPicksARepository(t *testing.T) {
	ctx := browser(t)
	base, _, beta, _, _ := twoRepos(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, cardColumn("a")+` === 'code'`, 10*time.Second)
	if eval[bool](t, ctx, `document.querySelector('#repos').hidden`) {
		t.Fatal("the repository picker is hidden on a board of two repositories")
	}
	if got := eval[string](t, ctx, `[...document.querySelectorAll('#repos option')].map(o => o.value).join(',')`); got != "alpha,beta-repo" {
		t.Fatalf("picker options %q, want alpha,beta-repo", got)
	}
	// As a user picks it: the select's value changes, then its change event.
	eval[bool](t, ctx, `(() => { const s = document.querySelector('#repos'); s.value = 'beta-repo'; return s.dispatchEvent(new Event('change')); })()`)
	waitJS(t, ctx, cardColumn("b")+` === 'paused' && !document.querySelector('.card[data-item="a"]')`, 10*time.Second)
	if got := eval[string](t, ctx, `document.querySelector('#runs').value`); got != beta.run {
		t.Errorf("run picker shows %q, want beta's run %s", got, beta.run)
	}
	if got := eval[string](t, ctx, `location.hash`); !strings.HasPrefix(got, "#/repo/beta-repo") {
		t.Errorf("address %q, want #/repo/beta-repo…", got)
	}
	waitJS(t, ctx, `document.querySelector('#conn').textContent === 'live'`, 10*time.Second)
	beta.set("b", "completed")
	beta.emit(event.Event{Type: event.TaskCompleted, Item: "b", Stage: "completed"})
	waitJS(t, ctx, cardColumn("b")+` === 'completed'`, 10*time.Second)
	screenshot(t, ctx, "board-second-repository.png")
}
