//go:build race

package cli_test

// raceEnabled: the race detector's shadow memory multiplies a process's
// footprint, so memory limits are reported but not enforced.
const raceEnabled = true
