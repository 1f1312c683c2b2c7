// Package runlock is a run's hold on a repository, .cadre/lock: one run
// at a time works in a checkout. The lock names its run and process; a
// lock whose process is gone is taken over.
package runlock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ErrLocked is wrapped when another live cadre run holds the repository.
var ErrLocked = errors.New("another cadre run is active")

// Info is the content of .cadre/lock.
type Info struct {
	Run     string    `json:"run"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// Lock is one run's hold on a repository.
type Lock struct {
	path string
	info Info
}

// Acquire takes .cadre/lock (the file lock in stateDir) for run. A lock
// whose process is gone is taken over, and warn is told so.
func Acquire(stateDir, run string, pid int, warn func(string)) (*Lock, error) {
	path := filepath.Join(stateDir, "lock")
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", stateDir, err)
	}
	info := Info{Run: run, PID: pid, Started: time.Now().UTC()}
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
		old, rerr := readFile(path)
		if rerr == nil && old.PID != pid && Alive(old.PID) {
			return nil, fmt.Errorf("%w: run %s (pid %d) holds %s; wait for it or run cadre stop %s", ErrLocked, old.Run, old.PID, path, old.Run)
		}
		if rerr == nil {
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

func readFile(path string) (Info, error) {
	var li Info
	data, err := os.ReadFile(path)
	if err != nil {
		return li, err
	}
	err = json.Unmarshal(data, &li)
	return li, err
}

// ReadInfo reads the lock in stateDir, whether its process is alive or not.
func ReadInfo(stateDir string) (Info, error) {
	return readFile(filepath.Join(stateDir, "lock"))
}

// Read reports the run holding the repository's lock, if its process
// is alive.
func Read(stateDir string) (run string, pid int, ok bool) {
	li, err := readFile(filepath.Join(stateDir, "lock"))
	if err != nil || !Alive(li.PID) {
		return "", 0, false
	}
	return li.Run, li.PID, true
}

// Release removes the lock if it is still ours.
func (l *Lock) Release() {
	if cur, err := readFile(l.path); err == nil && cur.Run == l.info.Run && cur.PID == l.info.PID {
		os.Remove(l.path)
	}
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
