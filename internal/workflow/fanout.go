package workflow

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// parallel runs nodes at once, each in its own copy of the scope; their
// outputs join in definition order.
func (in *Interp) parallel(ctx context.Context, nodes []Node, sc *scope) error {
	scopes := make([]*scope, len(nodes))
	for i := range nodes {
		branch := *sc
		branch.inputs = append([]string(nil), sc.inputs...)
		scopes[i] = &branch
	}
	err := in.fan(ctx, len(nodes), func(ctx context.Context, i int) error { return in.node(ctx, nodes[i], scopes[i]) })
	// Outputs join in definition order, whatever order the branches ended in.
	for _, b := range scopes {
		sc.inputs = appendNew(sc.inputs, b.inputs)
		sc.last = b.last
		if b.work != nil {
			sc.work, sc.review = b.work, b.review
		}
	}
	return err
}

// fan runs fn for 0..n-1 at once through the interpreter's Fanout, or
// goroutines when it has none.
func (in *Interp) fan(ctx context.Context, n int, fn func(context.Context, int) error) error {
	if in.Fanout != nil {
		return in.Fanout(ctx, n, fn)
	}
	return all(ctx, n, fn)
}

// all runs fn for 0..n-1 at once on goroutines and returns the first error
// in index order. A failure cancels the others (the item is lost anyway), but a
// pause for a human does not: the siblings' steps, already paid for, run
// to their end and are journaled, so the resumed item does not redo them.
func all(ctx context.Context, n int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = fn(ctx, i); errs[i] != nil && !errors.Is(errs[i], ErrPaused) {
				cancel()
			}
		}()
	}
	wg.Wait()
	var paused error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, ErrPaused):
			if paused == nil {
				paused = err
			}
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			// cancelled because a sibling failed; report the sibling
		default:
			return err
		}
	}
	if paused != nil {
		return paused
	}
	return ctx.Err()
}

func appendNew(dst, src []string) []string {
	for _, s := range src {
		if !contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

// forEach runs body once per plan task, in dependency waves, the tasks of a
// wave at once (the Exec bounds concurrent agent steps).
func (in *Interp) forEach(ctx context.Context, body []Node, sc *scope) error {
	in.mu.Lock()
	plan := in.plan
	in.mu.Unlock()
	if plan == nil {
		return &failure{"no implementation plan to fan out"}
	}
	waves, err := plan.Waves()
	if err != nil {
		return &failure{err.Error()}
	}
	in.mu.Lock()
	in.pending = map[string][]string{}
	for _, t := range plan.Tasks {
		in.pending[t.ID] = t.Files
	}
	in.mu.Unlock()
	// A task's steps read what came before the fan-out and their own
	// task's chain, never another task's outputs: a task later in the
	// plan finds the work of those it depends on committed in the
	// worktree. Once every task has run, the steps after the fan-out (the
	// integration checker, the PR composer) read all of them.
	before := sc.inputs[:len(sc.inputs):len(sc.inputs)]
	var done []string
	for _, wave := range waves {
		scopes := make([]*scope, len(wave))
		for i := range wave {
			tsc := *sc
			tsc.task = &wave[i]
			tsc.inputs = append([]string(nil), before...)
			tsc.note = ""
			scopes[i] = &tsc
		}
		err = in.fan(ctx, len(wave), func(ctx context.Context, i int) error {
			t := wave[i]
			err := in.seq(ctx, body, scopes[i])
			if !errors.Is(err, ErrPaused) {
				// A paused task is unfinished: its files stay out of
				// the other tasks' commits.
				in.mu.Lock()
				delete(in.pending, t.ID)
				in.mu.Unlock()
			}
			if f := (*failure)(nil); errors.As(err, &f) {
				return &failure{fmt.Sprintf("task %s: %s", t.ID, f.reason)}
			}
			if r := (*rejected)(nil); errors.As(err, &r) {
				return &rejected{reason: fmt.Sprintf("task %s: %s", t.ID, r.reason), fail: r.fail}
			}
			return err
		})
		for _, ts := range scopes {
			done = appendNew(done, ts.inputs[len(before):])
		}
		if err != nil {
			break
		}
	}
	sc.inputs = appendNew(append([]string(nil), before...), done)
	return err
}

// othersFiles lists the files declared by the plan's other unfinished tasks.
func (in *Interp) othersFiles(task string) []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []string
	for id, files := range in.pending {
		if id != task {
			out = append(out, files...)
		}
	}
	return out
}
