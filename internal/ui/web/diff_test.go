package web_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/ui/web"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// repoChanges is a repository's branch changes against main.
type repoChanges struct{ repo *workspace.Repo }

func (c repoChanges) Changes(ctx context.Context, branch string) (string, []workspace.LogCommit, error) {
	return c.repo.BranchChanges(ctx, "main", branch, 1<<20)
}

// The item page shows the item's commits and its diff against the base:
// added and removed lines marked, the text as text.
func TestItemPageShowsTheChange(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		c := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=T", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "greet.txt"), []byte("hi\n"), 0o644)
	git("add", "-A")
	git("commit", "-qm", "init")
	git("checkout", "-q", "-b", "cadre/42-greet")
	os.WriteFile(filepath.Join(dir, "greet.txt"), []byte("hello <b>world</b>\n"), 0o644)
	git("commit", "-qam", "Say hello properly")
	repo, err := workspace.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}

	j := newJournal(t)
	j.item("42", "Greet", store.ItemCompleted)
	coder := store.Step{RunID: j.run, ItemID: "42", ID: "42/code/coder#1", Role: "coder", Kind: "agent"}
	j.st.StartStep(context.Background(), coder)
	coder.Status, coder.Usage = store.StepCompleted, store.Usage{InputTokens: 33500, OutputTokens: 590, CostUSD: 0.1}
	if err := j.st.FinishStep(context.Background(), coder); err != nil {
		t.Fatal(err)
	}
	rec := store.Step{RunID: j.run, ItemID: "42", ID: report.PRStepID("42"), Kind: report.KindPR}
	j.st.StartStep(context.Background(), rec)
	rec.Status = store.StepCompleted
	rec.Result, _ = json.Marshal(report.PublishRecord{Branch: "cadre/42-greet", Output: "https://github.com/o/r/pull/3", Number: 3})
	if err := j.st.FinishStep(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	base := serveRepos(t, web.Repo{Name: "r", Store: j.st, Changes: repoChanges{repo}})
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/#/run/"+j.run+"/item/42")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `document.querySelector('#diff')`, 10*time.Second)
	if got := eval[string](t, ctx, `document.querySelector('#commits li').textContent`); len(got) < 13 || got[13:] != "Say hello properly" {
		t.Errorf("commit line %q, want a short sha and the subject", got)
	}
	if got := eval[string](t, ctx, `[...document.querySelectorAll('#diff .add')].map(e => e.textContent).join('')`); got != "+hello <b>world</b>\n" {
		t.Errorf("added lines %q", got)
	}
	if got := eval[string](t, ctx, `[...document.querySelectorAll('#diff .del')].map(e => e.textContent).join('')`); got != "-hi\n" {
		t.Errorf("removed lines %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#diff b').length`); n != 0 {
		t.Error("the diff's text made an element")
	}
	// The page uses the width: the change beside the facts and the steps.
	if got := eval[string](t, ctx, `(() => {
		const d = document.querySelector('#diff').getBoundingClientRect(), s = document.querySelector('#timeline').getBoundingClientRect();
		return d.left > s.right && d.top < s.bottom && d.right > innerWidth * 0.9 ? 'beside' : 'diff ' + JSON.stringify(d) + ' steps ' + JSON.stringify(s);
	})()`); got != "beside" {
		t.Errorf("on a %d px window the diff is not beside the steps: %s", 1600, got)
	}
	screenshot(t, ctx, "board-item-diff.png")
	if got := eval[string](t, ctx, `document.querySelector('#item-head').textContent`); !strings.Contains(got, "33.5k/590 tok") {
		t.Errorf("tokens not in short form: %q", got)
	}
}
