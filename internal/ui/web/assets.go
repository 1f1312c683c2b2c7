package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/cyclelog"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/store"
)

// assetJSON is an image the item keeps (docs/workflows.md#hand-offs-escalation-cycle-log).
type assetJSON struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Size int64  `json:"size"`
}

// assetTypes are the Content-Types of the images an item keeps, by
// extension: the name says what is served, the content is never sniffed.
var assetTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp", ".svg": "image/svg+xml",
}

func assetType(name string) string { return assetTypes[strings.ToLower(filepath.Ext(name))] }

// svgPolicy is the Content-Security-Policy of an svg served: it can carry
// script, which a sandbox with nothing allowed keeps from running, should
// the image be opened as a page rather than shown in an <img>.
const svgPolicy = "default-src 'none'; style-src 'unsafe-inline'; sandbox"

// itemDir is the item's state directory (.cadre/runs/RUN/items/ITEM),
// derived from one of its steps' journaled output paths, as step files
// are: a request picks an item of the journal, it never names a
// directory. "" when no step of the item has run yet.
func itemDir(ctx context.Context, st *store.Store, run, item string) (string, error) {
	if _, err := st.GetItem(ctx, run, item); err != nil {
		return "", err
	}
	steps, err := st.Steps(ctx, run)
	if err != nil {
		return "", err
	}
	for _, s := range steps {
		if s.ItemID == item && s.OutputPath != "" {
			return stepDir(s.OutputPath), nil
		}
	}
	return "", nil
}

// assets lists the images the item keeps: plain files under the seed's
// names, as asset serves them.
func (s *Server) assets(w http.ResponseWriter, r *http.Request, rp *repo) {
	out := []assetJSON{}
	dir, err := itemDir(r.Context(), rp.Store, r.PathValue("run"), r.PathValue("item"))
	if err != nil {
		fail(w, err)
		return
	}
	var entries []os.DirEntry
	if dir != "" {
		entries, _ = os.ReadDir(filepath.Join(dir, cyclelog.AssetDir))
	}
	for _, e := range entries {
		if !cyclelog.IsAsset(e.Name()) || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Size() <= cyclelog.MaxAsset {
			out = append(out, assetJSON{Name: e.Name(), Type: assetType(e.Name()), Size: fi.Size()})
		}
	}
	writeJSON(w, out)
}

// asset serves one image the item keeps, read under the item's directory
// without following links.
func (s *Server) asset(w http.ResponseWriter, r *http.Request, rp *repo) {
	name := r.PathValue("name")
	if !cyclelog.IsAsset(name) {
		http.Error(w, "no such image", http.StatusNotFound)
		return
	}
	dir, err := itemDir(r.Context(), rp.Store, r.PathValue("run"), r.PathValue("item"))
	if err != nil {
		fail(w, err)
		return
	}
	path := filepath.Join(dir, cyclelog.AssetDir, name)
	var data []byte
	if fi, lerr := os.Lstat(path); dir == "" || lerr != nil || !fi.Mode().IsRegular() || fi.Size() > cyclelog.MaxAsset {
		err = os.ErrNotExist
	} else {
		data, err = safefile.ReadFile(dir, path)
	}
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, safefile.ErrUnsafe):
		http.Error(w, "no such image", http.StatusNotFound)
		return
	case err != nil:
		fail(w, fmt.Errorf("read image %s: %w", name, err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", assetType(name))
	h.Set("X-Content-Type-Options", "nosniff")
	disposition := "inline"
	if assetType(name) == "image/svg+xml" {
		// Opened on its own it is downloaded, and sandboxed if shown.
		h.Set("Content-Security-Policy", svgPolicy)
		disposition = "attachment"
	}
	h.Set("Content-Disposition", fmt.Sprintf("%s; filename=%q", disposition, name))
	w.Write(data)
}
