// Package agent is cadre's public Go API for agents (docs/library.md):
// a role (WHAT an agent does) reached through a runner (HOW it is
// reached), the two chosen independently.
//
//	r, _ := agent.NewRunner("claude")                  // or "exec", "script", "ollama", ...
//	architect, _ := agent.New("architect", r)
//	resp, _ := architect.Invoke(ctx, "Add rate limiting", "")
//	critic := architect.WithRunner(other).WithPrompt("Review strictly.")
//
// It is a thin layer over cadre's own internals, not a second
// implementation: NewRunner builds runners from the registry the cadre
// command uses (internal/runner/builtin), New renders the same role
// templates (built-in or a repository's .cadre/roles), Invoke applies the
// engine's reply rules (internal/reply: the output file, the SIGNAL BLOCK,
// one corrective re-ask) and Triage routes with the engine's
// workflow.Route. What an agent does under the cadre command it does here.
//
// # Map
//
//   - runner.go: Runner, NewRunner and its options, Runner.Run (one raw
//     call, no role template), Request, Reply, Usage, ExitError.
//   - agent.go: Agent, New and its options, WithRunner, WithPrompt,
//     Invoke, Response, Signal.
//   - triage.go: Triage and Decision.
//
// Evaluation (Gatekeeper, Judge, Selector) is in package
// github.com/cadre-dev/cadre/eval. docs/library.md describes the design.
package agent
