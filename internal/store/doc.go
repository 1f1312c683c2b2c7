// Package store is cadre's journal: a SQLite database (normally
// .cadre/cadre.db) holding runs, the items of each run, the steps run for
// each item with their outcome and usage, and the event stream. It is
// also the score store (evals.go): evaluations of agents' work from runs
// and benchmarks, aggregated per role, runner and model. The store only
// records and sums; what the figures mean for picking a runner is policy,
// kept in internal/eval (StatsFor).
//
// The journal is what makes resume safe: a step recorded as completed is
// never started again (StartStep returns ErrCompleted), and every finished
// try's usage is kept so totals and budgets include failed work.
//
// Concurrency: a Store is safe for use by many goroutines. Writes go through
// one connection in short IMMEDIATE transactions; reads use a separate pool
// of read-only connections. The database runs in WAL mode, so another
// process (for example `cadre status`) can open the same file and read while
// a run writes; writers in different processes wait on each other through
// SQLite's busy timeout.
//
// Replicas (ops.go, replica.go): a Temporal worker on another machine keeps
// a replica of the journal of the machine that started the run. An item
// is hydrated into it from that journal's export; a tap (SetTap) records
// every write the replica then makes as an Op, and ApplyOps makes a
// numbered batch of them in the journal of truth in one transaction,
// once: a batch applied again changes nothing.
//
// Schema changes are numbered SQL files in migrations/ applied in order by
// Open and tracked in PRAGMA user_version.
package store
