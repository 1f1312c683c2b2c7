// Package bench runs role benchmarks (`cadre bench`, docs/evaluation.md):
// each benchmark case gives a role a prompt, the gatekeeper's
// requirements and the judge's rubric; every case is run by every runner
// under test, evaluated in two stages (gatekeeper, then judge for what
// passed), and recorded in the score store the model selector reads.
//
// # Package map
//
//   - case.go: Case, its strict YAML decoding (Parse), the built-in cases
//     embedded from cases/ (Builtin), a repository's .cadre/bench (LoadDir),
//     Merge and Select.
//   - workdir.go: the fresh git repository each job works in (a fixture
//     committed once per case, copied per job), the changed files, the
//     case's commands.
//   - journal.go: Options, Open (resume the latest unfinished benchmark
//     with the same options, or journal a new run), Job and its step id.
//   - bench.go: Bench.Execute, one job after another through the public
//     agent and eval packages, so the command uses the library's API.
//   - board.go: the leaderboard, read back from the score store.
//
// # Journal
//
// A benchmark is a run in the journal (workflow "bench", its Options as
// the run's options); each job is a step ("<role>/<case>/<runner>#<rep>")
// whose result is the evaluation's detail. A job's evaluation is recorded
// before its step is marked completed, and the score store ignores a
// second evaluation with the same key, so a crash between the two reruns
// the job without counting it twice.
package bench
