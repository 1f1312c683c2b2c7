package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cadre-dev/cadre/internal/promptlog"
	"github.com/cadre-dev/cadre/internal/store"
)

// A step file an agent replaced with a link to a file elsewhere is not
// served; the real output is.
func TestFileRefusesLinks(t *testing.T) {
	j := newJournal(t)
	j.item("T1", "One", "completed")
	j.step("T1", "code", "coder", "plain output", 0.1)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("do not serve"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(j.dir, "runs", j.run, "items", "T1", "logs")
	os.MkdirAll(logs, 0o755)
	if err := os.Symlink(secret, filepath.Join(logs, "code.log")); err != nil {
		t.Fatal(err)
	}
	base, _ := serve(t, j, nil, "127.0.0.1:0")
	get := func(kind string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + "/api/runs/" + j.run + "/file?step=T1/code&kind=" + kind)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("output"); code != http.StatusOK || body != "plain output" {
		t.Fatalf("output: %d %q", code, body)
	}
	if code, body := get("log"); code != http.StatusNotFound || body == "do not serve" {
		t.Fatalf("linked log: %d %q, want 404", code, body)
	}
	// The item page offers only what is served: the output, not the link.
	resp, err := http.Get(base + "/api/runs/" + j.run + "/items/T1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var item struct {
		Steps []struct {
			Files []string `json:"files"`
		} `json:"steps"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&item); err != nil {
		t.Fatal(err)
	}
	if len(item.Steps) != 1 || !slices.Equal(item.Steps[0].Files, []string{"output"}) {
		t.Errorf("item steps %+v, want one step offering only output", item.Steps)
	}
}

// A step's prompt is served from the item's prompts file: the latest one
// its step was given, and only for steps that have one.
func TestFileServesPrompt(t *testing.T) {
	j := newJournal(t)
	j.item("T1", "One", "completed")
	j.step("T1", "code", "coder", "out", 0.1)
	j.step("T1", "review", "reviewer", "out", 0.1)
	dir := filepath.Join(j.dir, "runs", j.run, "items", "T1")
	for _, p := range []string{"first", "second"} {
		if err := promptlog.Append(dir, "code", p+" prompt"); err != nil {
			t.Fatal(err)
		}
	}
	base, _ := serve(t, j, nil, "127.0.0.1:0")
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("/api/runs/" + j.run + "/file?step=T1/code&kind=prompt"); code != http.StatusOK || body != "second prompt" {
		t.Fatalf("prompt: %d %q", code, body)
	}
	if code, _ := get("/api/runs/" + j.run + "/file?step=T1/review&kind=prompt"); code != http.StatusNotFound {
		t.Fatalf("prompt of a step without one: %d, want 404", code)
	}
	_, body := get("/api/runs/" + j.run + "/items/T1")
	var item struct {
		Steps []struct {
			ID    string   `json:"id"`
			Files []string `json:"files"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(body), &item); err != nil {
		t.Fatal(err)
	}
	files := map[string][]string{}
	for _, s := range item.Steps {
		files[s.ID] = s.Files
	}
	if !slices.Equal(files["T1/code"], []string{"prompt", "output"}) || !slices.Equal(files["T1/review"], []string{"output"}) {
		t.Errorf("files offered: %v", files)
	}
}

// A step that has no files (a commit, a worktree) answers 404 for each
// kind the page may ask for, and 400 only for a kind there is none of.
func TestFileOfStepWithoutFiles(t *testing.T) {
	j := newJournal(t)
	j.item("T1", "One", "completed")
	ctx := context.Background()
	st := store.Step{RunID: j.run, ItemID: "T1", ID: "T1/commit", Kind: "action", Status: store.StepCompleted}
	if err := j.st.StartStep(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := j.st.FinishStep(ctx, st); err != nil {
		t.Fatal(err)
	}
	base, _ := serve(t, j, nil, "127.0.0.1:0")
	get := func(kind string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + "/api/runs/" + j.run + "/file?step=T1/commit&kind=" + kind)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, kind := range []string{"prompt", "context", "output", "log"} {
		if code, body := get(kind); code != http.StatusNotFound || body != "no "+kind+" file for step T1/commit\n" {
			t.Errorf("%s: %d %q, want 404 naming the kind", kind, code, body)
		}
	}
	if code, _ := get("diff"); code != http.StatusBadRequest {
		t.Errorf("unknown kind: %d, want 400", code)
	}
}
