// Package runlock is a run's hold on a repository: one run at a time works
// in a repository, whichever of its checkouts (the main one, or a linked
// git worktree) it was started from, since they share its branches and
// worktrees. The lock file lives in the repository's common git directory
// (File); it names its run, process and checkout, and a lock whose process
// is gone is taken over.
package runlock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrLocked is wrapped when another live cadre run holds the repository.
var ErrLocked = errors.New("another cadre run is active")

// File is the lock file of the repository whose common git directory
// (git rev-parse --git-common-dir) is common.
func File(common string) string { return filepath.Join(common, "cadre.lock") }

// Info is the content of the lock file.
type Info struct {
	Run string `json:"run"`
	PID int    `json:"pid"`
	// Proc tells the process PID was apart from a later one given the
	// same pid: the boot and the process's start time (ProcStamp). Empty
	// where /proc does not say, and in locks of older versions.
	Proc    string    `json:"proc,omitempty"`
	Started time.Time `json:"started"`
	// State is the state directory (.cadre) of the checkout the run works
	// from, which holds its journal and its stop requests.
	State string `json:"state,omitempty"`
	// Lends: the holder (cadre watch) lets runs it starts itself hold
	// the repository in its place until they end.
	Lends bool `json:"lends,omitempty"`
	// Lender is the run that lent the repository to this one (cadre
	// watch's, for a run it started), "" when none did.
	Lender string `json:"lender,omitempty"`
}

// Checkout is the top level of the checkout the run works from, or "".
func (i Info) Checkout() string {
	if i.State == "" {
		return ""
	}
	return filepath.Dir(i.State)
}

// Lock is one run's hold on a repository.
type Lock struct {
	path string
	info Info
	prev *Info // the same process's hold this one took over, given back on Release
}

// Acquire takes the lock file at path for holder (its Started is set
// now). A lock whose process is gone is taken over, and warn is told so.
func Acquire(path string, holder Info, warn func(string)) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	info := holder
	info.Started = time.Now().UTC()
	if info.Proc == "" {
		info.Proc = ProcStamp(info.PID)
	}
	data, _ := json.Marshal(info)
	for range 3 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			_, werr := f.Write(data)
			if serr := f.Sync(); werr == nil {
				werr = serr
			}
			if cerr := f.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				os.Remove(path)
				return nil, fmt.Errorf("write lock %s: %w", path, werr)
			}
			return &Lock{path: path, info: info}, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create lock %s: %w", path, err)
		}
		old, rerr := Stored(path)
		if rerr == nil && old.PID != info.PID && old.Alive() {
			return nil, refusal(path, old, info)
		}
		if rerr == nil && old.PID == info.PID && old.Lends && old.Run != info.Run {
			// This process holds the repository for something else (cadre
			// watch starting a run): the run holds it until Release gives
			// it back.
			info.Lender = old.Run
			data, _ = json.Marshal(info)
			if err := replace(path, data); err != nil {
				return nil, err
			}
			return &Lock{path: path, info: info, prev: &old}, nil
		}
		if rerr == nil && Alive(old.PID) && old.PID != info.PID {
			warn(fmt.Sprintf("taking over the stale lock of run %s (pid %d is another process now)", old.Run, old.PID))
		} else if rerr == nil {
			warn(fmt.Sprintf("taking over the stale lock of run %s (pid %d is gone)", old.Run, old.PID))
		} else {
			warn(fmt.Sprintf("replacing unreadable lock %s", path))
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("remove stale lock: %w", err)
		}
	}
	return nil, fmt.Errorf("%w: could not take %s", ErrLocked, path)
}

// refusal is the error of a lock that old, alive, holds against want: it
// says where old works when that is another checkout, since cadre stop
// acts on the run of its own checkout.
func refusal(path string, old, want Info) error {
	if co := old.Checkout(); co != "" && old.State != want.State {
		return fmt.Errorf("%w: run %s (pid %d) of the checkout %s holds %s; wait for it or run cadre stop %s there",
			ErrLocked, old.Run, old.PID, co, path, old.Run)
	}
	return fmt.Errorf("%w: run %s (pid %d) holds %s; wait for it or run cadre stop %s", ErrLocked, old.Run, old.PID, path, old.Run)
}

// Stored reads the lock file at path, whether its process is alive or not.
func Stored(path string) (Info, error) {
	var li Info
	data, err := os.ReadFile(path)
	if err != nil {
		return li, err
	}
	err = json.Unmarshal(data, &li)
	return li, err
}

// Holder reports the run holding the lock file at path, if its process is
// alive.
func Holder(path string) (Info, bool) {
	li, err := Stored(path)
	if err != nil || !li.Alive() {
		return Info{}, false
	}
	return li, true
}

// Alive says whether the process that took the lock still runs: its pid
// is alive and, where the lock says which process it was, is still that
// process, not a later one the pid was given to.
func (i Info) Alive() bool {
	if !Alive(i.PID) {
		return false
	}
	if i.Proc == "" {
		return true
	}
	now := ProcStamp(i.PID)
	return now == "" || now == i.Proc
}

// ProcStamp names process pid apart from any other that has or had the
// same pid: the boot's id and the process's start time since boot, from
// /proc; "" where /proc does not say.
func ProcStamp(pid int) string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil || pid <= 0 {
		return ""
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// Fields after the command name (in parentheses, which may hold
	// spaces): state is the 3rd field, starttime the 22nd.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return strings.TrimSpace(string(boot)) + ":" + f[19]
}

// Release removes the lock if it is still ours.
func (l *Lock) Release() {
	if cur, err := Stored(l.path); err == nil && cur.Run == l.info.Run && cur.PID == l.info.PID {
		if l.prev != nil {
			data, _ := json.Marshal(*l.prev)
			if replace(l.path, data) == nil {
				return
			}
		}
		os.Remove(l.path)
	}
}

// replace writes the lock file at path anew, whole or not at all.
func replace(path string, data []byte) error {
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write lock %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write lock %s: %w", path, err)
	}
	return nil
}

// Alive says whether process pid runs (one of another user's counts). A
// zombie does not: a run killed under a parent that never reaps it (a
// container without an init) must not hold its repository for good.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !zombie(pid)
}

// zombie says whether pid has exited and waits to be reaped; false where
// /proc does not say.
func zombie(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and
	// may hold spaces and parentheses itself.
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && i+2 < len(data) && data[i+2] == 'Z'
}
