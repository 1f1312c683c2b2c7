package cyclelog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/safefile"
)

// AssetDir is the directory of visual artifacts (screenshots, diagrams)
// in a worktree and beside a task file, as context/assets, and the name
// of the directory in the item's state directory that keeps them.
const AssetDir = "assets"

// MaxAsset bounds one image kept with an item, and the images kept at
// one step together: a screenshot or a diagram is smaller, a flood
// written under an image's name must not be copied into the state
// directory, and what a step adds there travels to the run's home in one
// batch when a worker elsewhere ran it (internal/replica), whose Temporal
// payload holds 2 MB at most.
const MaxAsset = 1 << 20

// maxAssets bounds how many images an item keeps.
const maxAssets = 200

// assetRE is seed 002's name of an image: YYYY-MM-DD_HH-MM-SS_description.ext,
// the description letters, digits, dashes and underscores, so that a name
// is never a path, hidden, or anything a page or a shell reads otherwise.
var assetRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}_[0-9]{2}-[0-9]{2}-[0-9]{2}_[A-Za-z0-9][A-Za-z0-9_-]{0,99}\.(?i:png|jpe?g|gif|webp|svg)$`)

// IsAsset says whether name is an image's name as seed 002 gives it.
func IsAsset(name string) bool { return assetRE.MatchString(name) }

// assetsDir is the item's directory of kept images, beside the log.
func (c *Log) assetsDir() string { return filepath.Join(filepath.Dir(c.path), AssetDir) }

// keep copies into the item's assets directory the images of src (a
// context/assets directory) last changed at or after since, and returns
// the names it copied: those new to the item or changed since they were
// kept, *left bytes at most. Nothing is read through a link, nor a file
// over MaxAsset; what cannot be read is left out, as the images are a
// record, not the work.
func (c *Log) keep(src string, since time.Time, left *int) []string {
	if src == "" {
		return nil
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil
	}
	root, dst := filepath.Dir(c.path), c.assetsDir()
	have := c.kept()
	var got []string
	for _, e := range entries {
		name := e.Name()
		if !IsAsset(name) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() > int64(min(MaxAsset, *left)) || info.ModTime().Before(since) {
			continue
		}
		// Read under the directory that holds context/ (a worktree, a task
		// file's), so that a link on the way is refused.
		data, err := safefile.ReadFile(filepath.Dir(filepath.Dir(src)), filepath.Join(src, name))
		if err != nil || len(data) > min(MaxAsset, *left) {
			continue
		}
		path := filepath.Join(dst, name)
		if old, err := safefile.ReadFile(root, path); err == nil && bytes.Equal(old, data) {
			continue
		}
		if !slices.Contains(have, name) && len(have)+len(got) >= maxAssets {
			continue
		}
		if safefile.WriteMaking(root, path, data) == nil {
			got = append(got, name)
			*left -= len(data)
		}
	}
	return got
}

// kept lists the images the item keeps, by name.
func (c *Log) kept() []string {
	entries, err := os.ReadDir(c.assetsDir())
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if IsAsset(e.Name()) && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names
}

// assetList is names as a Markdown list of links relative to the log
// (assets/NAME), or none when names is empty.
func assetList(names []string, none string) string {
	if len(names) == 0 {
		return none
	}
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "- [%s](%s/%s)\n", n, AssetDir, n)
	}
	return b.String()
}

// assetLinkRE is a link to a kept image, as assetList writes it.
var assetLinkRE = regexp.MustCompile(`\]\(` + AssetDir + `/([^)/\s]+)\)`)

// relinkAssets points the links to kept images from dir, where an
// archive of the log lies, rather than from beside the log.
func (c *Log) relinkAssets(log, dir string) string {
	rel, err := filepath.Rel(dir, c.assetsDir())
	if err != nil {
		return log
	}
	return assetLinkRE.ReplaceAllStringFunc(log, func(m string) string {
		name := assetLinkRE.FindStringSubmatch(m)[1]
		if !IsAsset(name) {
			return m
		}
		return "](" + filepath.ToSlash(filepath.Join(rel, name)) + ")"
	})
}

// stepAssets keeps the images e's step added: those of its tree changed
// since it started, and those a person dropped beside the task file
// meanwhile.
func (c *Log) stepAssets(e Entry) []string {
	left := MaxAsset
	names := c.keep(c.taskAssets, time.Time{}, &left)
	if e.WorkDir != "" && !e.Since.IsZero() {
		names = append(names, c.keep(filepath.Join(e.WorkDir, "context", AssetDir), e.Since, &left)...)
	}
	return names
}
