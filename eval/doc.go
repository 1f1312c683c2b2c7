// Package eval is cadre's public evaluation API (docs/library.md,
// docs/evaluation.md):
// Gatekeeper.Validate, the deterministic first stage; Judge.Evaluate, a
// model scoring a response against a rubric; and Selector.Select, which
// picks the runner and model that do a role best for the money from
// recorded Scores.
//
// The types are aliases of cadre's internal ones and the functions call
// the same code the engine and `cadre bench` use, so a program and the
// cadre command evaluate work identically. A Judge reaches its model
// through an agent.Runner, like any agent.
//
// Scores is an interface so that the selector can read any record:
// MemoryScores keeps one in memory; cadre's SQLite score store implements
// it too once it lands.
package eval
