// Package proc runs agent processes safely: each in its own process group,
// with a complete (minimal) environment, bounded output, and a timeout or
// cancellation that takes down the whole group — SIGTERM first, SIGKILL after
// a grace period — so no orphan outlives its run. An agent also dies with
// cadre: SIGKILL is its parent-death signal, and a watchdog outside its
// group kills the rest of the group when cadre is gone. GroupOf and
// KillGroup let a resume kill a group a crash left behind, identified by
// its leader's pid and start time so a reused pid is never hit. A Spec
// with a Sandbox runs its program inside bubblewrap (see Sandbox), so every
// runner that starts a process gets the same confinement from here.
//
// The package targets Unix; it relies on process groups and is exercised on
// Linux.
package proc
