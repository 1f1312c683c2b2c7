package web_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/ui/web"
)

// fakePRs answers where pull requests stand, counting the questions.
type fakePRs struct {
	mu    sync.Mutex
	asked int
	st    codehost.PRStatus
}

func (f *fakePRs) PRStatus(context.Context, int) (codehost.PRStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	return f.st, nil
}

// A card links its item's pull request and says where it stands: the
// state (open reads following), checks, review and mergeability, asked of
// GitHub at most every half minute however often the board loads.
func TestCardShowsItsPullRequest(t *testing.T) {
	ctx := browser(t)
	j := newJournal(t)
	j.item("42", "Fix the widget", store.ItemCompleted)
	rec := store.Step{RunID: j.run, ItemID: "42", ID: report.PRStepID("42"), Kind: report.KindPR}
	j.st.StartStep(context.Background(), rec)
	rec.Status = store.StepCompleted
	rec.Result, _ = json.Marshal(report.PublishRecord{Branch: "cadre/42-fix", Output: "https://github.com/o/r/pull/7", Number: 7})
	if err := j.st.FinishStep(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	no := false
	prs := &fakePRs{st: codehost.PRStatus{State: "open", Checks: "failure", Review: "changes_requested", Mergeable: &no}}
	base := serveRepos(t, web.Repo{Name: "r", Store: j.st, PRs: prs})

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `document.querySelector('.card[data-item="42"] .pr')`, 10*time.Second)
	want := "PR #7 · following · checks failure · changes requested · conflicts"
	if got := eval[string](t, ctx, `document.querySelector('.card[data-item="42"] .pr').textContent`); got != want {
		t.Errorf("card's pull request line = %q, want %q", got, want)
	}
	if got := eval[string](t, ctx, `document.querySelector('.card[data-item="42"] .pr a').href`); got != "https://github.com/o/r/pull/7" {
		t.Errorf("card links %q, want the pull request", got)
	}
	screenshot(t, ctx, "board-card-pr.png")
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `document.querySelector('.card[data-item="42"] .pr')`, 10*time.Second)
	if prs.asked != 1 {
		t.Errorf("GitHub asked %d times for two loads, want once", prs.asked)
	}
}
