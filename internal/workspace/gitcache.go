package workspace

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// systemConfig is where a distribution's git reads its system-wide
// configuration; watched whether or not it exists, so its creation shows.
const systemConfig = "/etc/gitconfig"

// racyWindow: a file changed this recently may change again within the
// same (coarse, tick-based) timestamp without its stat changing, so what
// was read from it is not cached (git's "racy" index entries, same reason).
const racyWindow = 100 * time.Millisecond

// gitCache holds what cadre would otherwise ask git for before and after
// every agent step and before every git command of an untrusted tree: the
// repository's directories, the files its configuration is read from and
// the filter drivers it defines. Each costs a git process; between two
// steps none of it changes unless a configuration file does, so entries
// are kept while the stat of every configuration file is unchanged.
type gitCache struct {
	mu             sync.Mutex
	common, gitDir string   // absolute; fixed for a working tree
	stamp          string   // stat fingerprint the entries were read under; "" = nothing cached
	origins        []string // files configuration is read from besides the base ones, each once
	filters        string   // git config --name-only --get-regexp filterKeys
	haveFilters    bool
	email          string     // git config user.email, from the same read
	states         stateCache // watched files as last read (Snapshot); own lock
	watched        []string   // Snapshot's paths, kept while stamp is watchStamp
	watchStamp     string     // and the hooks directory's stat is hooksKey
	hooksKey       statKey
	snap           string // the last TreeState snapshot
	snapPrint      uint64 // the tree's Fingerprint then
	snapIndex      string // the index snap is staged in, until used or replaced; "" for a tree id
}

func (r *Repo) gitCache() *gitCache {
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	if r.cache == nil {
		r.cache = &gitCache{}
	}
	return r.cache
}

// gitDirs returns the repository's common directory and this working
// tree's git directory, absolute.
func (r *Repo) gitDirs(ctx context.Context) (common, gitDir string, err error) {
	c := r.gitCache()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.common != "" {
		return c.common, c.gitDir, nil
	}
	out, err := git(ctx, r.Dir, "rev-parse", "--path-format=absolute", "--git-common-dir", "--git-dir")
	if err != nil {
		return "", "", err
	}
	dirs := strings.Fields(out)
	if len(dirs) != 2 {
		return "", "", fmt.Errorf("unexpected rev-parse output %q", out)
	}
	c.common, c.gitDir = dirs[0], dirs[1]
	return c.common, c.gitDir, nil
}

// baseConfigFiles are the configuration files git reads for this tree
// before any include: system, user, repository and worktree.
func baseConfigFiles(common, gitDir string) []string {
	return append([]string{systemConfig, filepath.Join(common, "config"), filepath.Join(common, "config.worktree"),
		filepath.Join(gitDir, "config.worktree")}, globalFiles()...)
}

// fingerprint is the stat of each path (absent ones included), or "" when
// it cannot be taken. A file changed within racyWindow may change again
// without its stat changing: its content is part of its fingerprint
// instead, so a repository whose configuration was just written (cadre's
// own setup, a test's) is not asked again at every step of the run's
// first moments.
func fingerprint(paths []string) string {
	// Built in a reused buffer and returned as its hash: this runs two or
	// three times per agent step, and the stamp is only ever compared.
	bp := scratch.Get().(*[]byte)
	defer scratch.Put(bp)
	b := (*bp)[:0]
	defer func() { *bp = b[:0] }()
	now := time.Now()
	for _, p := range paths {
		b = append(b, p...)
		var st syscall.Stat_t
		if lstat(p, &st) != nil {
			b = append(b, ":-\x00"...)
			continue
		}
		if key, ok := keyOf(&st, now); ok {
			for _, n := range []uint64{key.ino, key.size, uint64(key.mode), uint64(key.mtime), uint64(key.ctimeS), uint64(key.ctNS)} {
				b = append(b, ':')
				b = strconv.AppendUint(b, n, 16)
			}
			b = append(b, 0)
			continue
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
			return ""
		}
		buf := scratch.Get().(*[]byte)
		data, err := readSmall(p, st.Size, buf)
		if err != nil || len(data) > maxWatched {
			scratch.Put(buf)
			return ""
		}
		sum := sha256.Sum256(data)
		scratch.Put(buf)
		b = append(b, ':')
		b = strconv.AppendUint(b, st.Ino, 16)
		b = append(b, ":="...)
		b = append(b, sum[:]...)
		b = append(b, 0)
	}
	sum := sha256.Sum256(b)
	return string(sum[:])
}

// configOrigins returns the files git reads configuration from for this
// tree besides baseConfigFiles (includes among them), each once. It asks
// git only when a configuration file changed since the last answer; a
// configuration with includes is asked every time, since an include may
// name a file that does not exist yet.
// The caller holds c.mu.
func (r *Repo) configOrigins(ctx context.Context, c *gitCache) []string {
	base := baseConfigFiles(c.common, c.gitDir)
	if c.stamp != "" && fingerprint(append(base, c.origins...)) == c.stamp {
		return c.origins
	}
	c.stamp, c.haveFilters = "", false
	// Taken before git reads: a file changed while it does leaves no stamp.
	before := fingerprint(base)
	// Reading configuration runs nothing.
	out, _ := git(ctx, r.Dir, "config", "--list", "--includes", "--show-origin", "-z")
	var origins []string
	var filters strings.Builder
	includes, email := false, ""
	recs := strings.Split(out, "\x00")
	for i := 0; i+1 < len(recs); i += 2 {
		if p, ok := strings.CutPrefix(recs[i], "file:"); ok {
			if !filepath.IsAbs(p) {
				p = filepath.Join(r.Dir, p)
			}
			// One record per setting: a file is named once per line it
			// holds, and every stamp stats each file named.
			if !slices.Contains(base, p) && !slices.Contains(origins, p) {
				origins = append(origins, p)
			}
		}
		key, value, _ := strings.Cut(recs[i+1], "\n")
		if strings.HasPrefix(strings.ToLower(key), "include") {
			includes = true
			// The included file itself is watched, whether or not it
			// holds a setting yet (git names only files that do): one
			// without is then put back as it was, not removed.
			if inc := includedFile(recs[i], key, value, r.Dir); inc != "" && !slices.Contains(base, inc) && !slices.Contains(origins, inc) {
				origins = append(origins, inc)
			}
		}
		if key == "user.email" {
			email = value // the last one wins, as in git config user.email
		}
		// The names are canonical, as git config --get-regexp matches
		// them: the filter drivers come from the same read, not from a
		// second git process.
		if filterKeyRE.MatchString(key) {
			filters.WriteString(key + "\n")
		}
	}
	c.origins = origins
	c.filters, c.haveFilters, c.email = filters.String(), true, email
	if !includes && before != "" && fingerprint(base) == before {
		c.stamp = fingerprint(append(base, origins...))
	}
	return origins
}

// includedFile is the file an include.path or includeIf.*.path setting
// names, as git resolves it: "~/" from the home directory, a relative path
// from the directory of the file that holds the setting; "" for any other
// key, or a path that cannot be resolved here.
func includedFile(origin, key, value, dir string) string {
	k := strings.ToLower(key)
	if !strings.HasSuffix(k, ".path") || !(k == "include.path" || strings.HasPrefix(k, "includeif.")) || value == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(value, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		return filepath.Join(home, rest)
	}
	if filepath.IsAbs(value) {
		return filepath.Clean(value)
	}
	from, ok := strings.CutPrefix(origin, "file:")
	if !ok {
		return ""
	}
	if !filepath.IsAbs(from) {
		from = filepath.Join(dir, from)
	}
	return filepath.Join(filepath.Dir(from), value)
}

// filterKeyRE is filterKeys compiled.
var filterKeyRE = regexp.MustCompile(filterKeys)

// filterConfig is the output of git config --name-only --get-regexp
// filterKeys: the settings of every filter driver now defined.
func (r *Repo) filterConfig(ctx context.Context) string {
	ask := func() string {
		// A failure (no driver defined: exit 1) means there is nothing
		// to switch off.
		out, _ := git(ctx, r.Dir, "config", "--name-only", "--get-regexp", filterKeys)
		return out
	}
	if _, _, err := r.gitDirs(ctx); err != nil {
		return ask()
	}
	c := r.gitCache()
	c.mu.Lock()
	defer c.mu.Unlock()
	r.configOrigins(ctx, c)
	if c.haveFilters {
		return c.filters
	}
	c.filters, c.haveFilters = ask(), c.stamp != ""
	return c.filters
}

// userEmail is git config user.email, read with the configuration's
// origins rather than by a git process of its own.
func (r *Repo) userEmail(ctx context.Context) string {
	if _, _, err := r.gitDirs(ctx); err != nil {
		out, _ := r.Git(ctx, "config", "user.email")
		return out
	}
	c := r.gitCache()
	c.mu.Lock()
	defer c.mu.Unlock()
	r.configOrigins(ctx, c)
	return c.email
}
