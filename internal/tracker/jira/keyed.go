package jira

import (
	"context"
	"sync"
)

// keyed is a set of mutexes, one per key, made on demand and dropped when
// no one holds or waits for them, so a long run does not grow it.
type keyed struct {
	mu    sync.Mutex
	locks map[string]*keyLock
}

type keyLock struct {
	held chan struct{} // a token in the channel means held
	refs int           // holders and waiters
}

// lock takes key's mutex, or returns ctx's error when ctx ends first.
func (k *keyed) lock(ctx context.Context, key string) (unlock func(), err error) {
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
	case <-ctx.Done():
		k.drop(key, l)
		return nil, ctx.Err()
	}
	return func() {
		<-l.held
		k.drop(key, l)
	}, nil
}

func (k *keyed) drop(key string, l *keyLock) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(k.locks, key)
	}
}
