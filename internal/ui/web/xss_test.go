package web_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cadre-dev/cadre/internal/event"
)

// Text from issues and agents is shown as text: a title and an agent's
// output carrying markup neither run a script nor add an element, on the
// board, the item page, or live through the event stream.
func TestHostileTextIsShownNotRun(t *testing.T) {
	ctx := browser(t)
	const title = `<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">`
	const output = `done <script>window.__pwned=3</script><b id="bold">bold</b><img src=x onerror="window.__pwned=4">`
	j := newJournal(t)
	j.item("evil", title, "running")
	j.step("evil", "code-coder-1", "coder", output, 0.01)
	base, _ := serve(t, j, &recorder{}, "127.0.0.1:0")

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `document.querySelector('.card[data-item="evil"] .title')`, 10*time.Second)
	if !eval[bool](t, ctx, `document.querySelector('#repos').hidden`) {
		t.Error("a board of one repository shows a repository picker")
	}
	if got := eval[string](t, ctx, `document.querySelector('.card[data-item="evil"] .title').textContent`); got != title {
		t.Errorf("card title = %q, want the title as text %q", got, title)
	}
	// Live: a paused event whose reason carries markup.
	j.emit(event.Event{Type: event.ItemPaused, Item: "evil", Message: `<img src=x onerror="window.__pwned=5">why`})
	waitJS(t, ctx, `document.querySelector('.card[data-item="evil"] .reason')?.textContent.includes('onerror')`, 10*time.Second)

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/#/run/"+j.run+"/item/evil")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `document.querySelector('pre.file[data-kind="output"]')?.textContent.length > 0`, 10*time.Second)
	if got := eval[string](t, ctx, `document.querySelector('pre.file[data-kind="output"]').textContent`); got != output {
		t.Errorf("output shown = %q, want the output as text %q", got, output)
	}
	if got := eval[string](t, ctx, `document.querySelector('#item-title').textContent`); got != title {
		t.Errorf("item title = %q, want %q", got, title)
	}
	time.Sleep(200 * time.Millisecond) // an injected image's onerror would have fired by now
	if pwned := eval[bool](t, ctx, `typeof window.__pwned !== 'undefined'`); pwned {
		t.Errorf("injected script ran: window.__pwned = %v", eval[any](t, ctx, `window.__pwned`))
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('main img, main script, #bold').length`); n != 0 {
		t.Errorf("%d elements from the hostile text were created", n)
	}
	screenshot(t, ctx, "board-xss-item.png")
}
