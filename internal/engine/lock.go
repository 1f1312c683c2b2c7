package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ErrLocked is wrapped when another live cadre run holds the repository.
var ErrLocked = errors.New("another cadre run is active")

// lockInfo is the content of .cadre/lock.
type lockInfo struct {
	Run     string    `json:"run"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// lock is one run's hold on a repository.
type lock struct {
	path string
	info lockInfo
}

// acquireLock takes .cadre/lock for run. A lock whose process is gone is
// taken over, and warn is told so.
func acquireLock(stateDir, run string, pid int, warn func(string)) (*lock, error) {
	path := filepath.Join(stateDir, "lock")
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", stateDir, err)
	}
	info := lockInfo{Run: run, PID: pid, Started: time.Now().UTC()}
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
			return &lock{path: path, info: info}, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create lock %s: %w", path, err)
		}
		old, rerr := readLock(path)
		if rerr == nil && old.PID != pid && alive(old.PID) {
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

func readLock(path string) (lockInfo, error) {
	var li lockInfo
	data, err := os.ReadFile(path)
	if err != nil {
		return li, err
	}
	err = json.Unmarshal(data, &li)
	return li, err
}

// ReadLock reports the run holding the repository's lock, if its process
// is alive.
func ReadLock(stateDir string) (run string, pid int, ok bool) {
	li, err := readLock(filepath.Join(stateDir, "lock"))
	if err != nil || !alive(li.PID) {
		return "", 0, false
	}
	return li.Run, li.PID, true
}

// release removes the lock if it is still ours.
func (l *lock) release() {
	if cur, err := readLock(l.path); err == nil && cur.Run == l.info.Run && cur.PID == l.info.PID {
		os.Remove(l.path)
	}
}

func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
