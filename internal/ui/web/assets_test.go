package web_test

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The item page's images: the API lists those the item keeps and serves
// each with its type, never sniffed; an svg, which can carry script,
// only as a sandboxed attachment; a link, a name not of the seed's form
// and another item's path are not served.
func TestItemAssets(t *testing.T) {
	j := newJournal(t)
	j.item("T1", "One", "completed")
	j.step("T1", "code", "coder", "out", 0.1)
	assets := filepath.Join(j.dir, "runs", j.run, "items", "T1", "assets")
	os.MkdirAll(assets, 0o755)
	const png, svg, link = "2026-01-02_10-00-00_login.png", "2026-01-02_10-00-01_flow.svg", "2026-01-02_10-00-02_link.png"
	os.WriteFile(filepath.Join(assets, png), []byte("\x89PNG\r\n\x1a\n"), 0o644)
	os.WriteFile(filepath.Join(assets, svg), []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), 0o644)
	os.WriteFile(filepath.Join(assets, "notes.png"), []byte("x"), 0o644)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("do not serve"), 0o600)
	os.Symlink(secret, filepath.Join(assets, link))
	base, _ := serve(t, j, nil, "127.0.0.1:0")
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Get(base + "/api/runs/" + j.run + "/items/" + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	resp, body := get("T1/assets")
	var list []struct {
		Name string `json:"name"`
		Type string `json:"type"`
		Size int64  `json:"size"`
	}
	if err := json.Unmarshal([]byte(body), &list); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("list: %d %v %q", resp.StatusCode, err, body)
	}
	if len(list) != 2 || list[0].Name != png || list[0].Type != "image/png" || list[0].Size != 8 || list[1].Name != svg {
		t.Errorf("list %+v, want %s and %s", list, png, svg)
	}
	resp, body = get("T1/assets/" + png)
	h := resp.Header
	if resp.StatusCode != http.StatusOK || h.Get("Content-Type") != "image/png" || h.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") || body != "\x89PNG\r\n\x1a\n" {
		t.Errorf("png: %d %v %q", resp.StatusCode, h, body)
	}
	resp, _ = get("T1/assets/" + svg)
	h = resp.Header
	if resp.StatusCode != http.StatusOK || h.Get("Content-Type") != "image/svg+xml" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") ||
		!strings.HasPrefix(h.Get("Content-Disposition"), "attachment") {
		t.Errorf("svg: %d %v", resp.StatusCode, h)
	}
	for _, p := range []string{"T1/assets/" + link, "T1/assets/notes.png", "T1/assets/..%2F..%2FT1%2Foutputs%2Fcode.md", "T2/assets/" + png, "T2/assets"} {
		if resp, body := get(p); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "do not serve") {
			t.Errorf("%s: %d %q, want 404", p, resp.StatusCode, body)
		}
	}
}

// The item page shows the item's images as thumbnails, an svg's script
// not run.
func TestItemPageShowsAssets(t *testing.T) {
	ctx := browser(t)
	j := newJournal(t)
	j.item("T1", "One", "completed")
	j.step("T1", "code", "coder", "out", 0.1)
	assets := filepath.Join(j.dir, "runs", j.run, "items", "T1", "assets")
	os.MkdirAll(assets, 0o755)
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	png.Encode(&b, img)
	os.WriteFile(filepath.Join(assets, "2026-01-02_10-00-00_login.png"), b.Bytes(), 0o644)
	os.WriteFile(filepath.Join(assets, "2026-01-02_10-00-01_flow.svg"),
		[]byte(`<svg xmlns="http://www.w3.org/2000/svg" width="20" height="10"><script>parent.window.__svgRan=1</script><rect width="20" height="10"/></svg>`), 0o644)
	base, _ := serve(t, j, nil, "127.0.0.1:0")
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/#/run/"+j.run+"/item/T1")); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, `[...document.querySelectorAll('#assets img')].filter(i => i.complete && i.naturalWidth > 0).length === 2`, 10*time.Second)
	if got := eval[string](t, ctx, `[...document.querySelectorAll('#assets figcaption')].map(e => e.textContent).join(' ')`); got != "2026-01-02_10-00-00_login.png 2026-01-02_10-00-01_flow.svg" {
		t.Errorf("captions %q", got)
	}
	if eval[bool](t, ctx, `!!window.__svgRan`) {
		t.Error("the svg's script ran")
	}
	screenshot(t, ctx, "board-item-assets.png")
}
