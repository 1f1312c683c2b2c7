// Package proc runs agent processes safely: each in its own process group,
// with a complete (minimal) environment, bounded output, and a timeout or
// cancellation that takes down the whole group — SIGTERM first, SIGKILL after
// a grace period — so no orphan outlives its run.
//
// The package targets Unix; it relies on process groups and is exercised on
// Linux.
package proc
