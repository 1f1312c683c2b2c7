// Package keylock is a set of mutexes, one per key (an issue, a resource),
// so that one look-up-then-write per key runs at a time while others go on.
package keylock

import (
	"context"
	"sync"
)

// Set is a set of mutexes, one per key, made on demand and dropped when
// no one holds or waits for them, so a long run does not grow it.
type Set struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	held chan struct{} // a token in the channel means held
	refs int           // holders and waiters
}

// Lock takes key's mutex, or returns ctx's error when ctx ends first.
// waiting, when not nil, is told the key before lock blocks, so a test can
// see that a caller queued without guessing how long to wait.
func (k *Set) Lock(ctx context.Context, key string, waiting func(string)) (unlock func(), err error) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyLock{held: make(chan struct{}, 1)}
		k.locks[key] = l
	}
	l.refs++
	k.mu.Unlock()

	select {
	case l.held <- struct{}{}:
	default:
		if waiting != nil {
			waiting(key)
		}
		select {
		case l.held <- struct{}{}:
		case <-ctx.Done():
			k.drop(key, l)
			return nil, ctx.Err()
		}
	}
	return func() {
		<-l.held
		k.drop(key, l)
	}, nil
}

func (k *Set) drop(key string, l *keyLock) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(k.locks, key)
	}
}
