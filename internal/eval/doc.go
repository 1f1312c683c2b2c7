// Package eval scores agent work so cadre can tell good runs from bad ones
// and pick the runner and model that do a role best for the money
// (docs/evaluation.md). Everything here is pure: the engine gathers the facts
// (output text, changed files, command exit codes, the judge's reply,
// recorded statistics), and this package only decides. That keeps every
// rule table-testable and lets the local and Temporal executors share it.
//
// # Package map
//
//   - requirements.go: Requirements (loadable from cadre.yaml and bench
//     files), DefaultRequirements per role, Merge for per-role overrides.
//   - gatekeeper.go: Gatekeeper.Validate, the first, deterministic stage:
//     sections, SIGNAL BLOCK, plan JSON, diff scope, forbidden paths,
//     commands. Result carries one Check per requirement, Score and Summary.
//   - paths.go: repository-rooted glob matching ("**" spans directories)
//     and DefaultForbiddenPaths.
//   - judge.go, rubric.go: the second stage. RenderRubricPrompt asks a judge
//     role to score a response against a Rubric; ParseJudgement reads its
//     JSON answer, forgiving about layout and strict about values;
//     ReaskPrompt turns a parse error into the one corrective re-ask.
//   - selector.go: Selector.Select picks a Candidate (runner or
//     runner/model) for a role from recorded Stats.
//   - records.go: StatsFor turns a role's score-store Records into the
//     selector's Stats per candidate ("claude" spans its models,
//     "claude/sonnet" does not).
//
// # Selector: UCB1 over quality minus a relative cost penalty
//
// The selector is UCB1 rather than Thompson sampling: it is deterministic,
// so a pick can be explained in one line, journaled, reproduced on resume
// and table-tested without seeding a random source. Candidates with fewer
// than MinSamples samples (at least one) are tried first, in listed order.
// Once all have data, each candidate i scores
//
//	value_i = quality_i − CostWeight · cost_i / max_j cost_j
//	score_i = value_i + Explore · sqrt(ln N / n_i)
//
// where quality is the mean quality in 0..1, cost the mean USD per step,
// n_i the candidate's samples and N the samples of all candidates. The
// highest score wins; ties go to the earlier candidate.
//
// The cost penalty is relative to the dearest candidate rather than a
// quotient quality/cost, because a quotient divides by zero for free
// runners (ollama, modelsim, exec) and lets a free but useless model beat
// every paid one. Relative cost is also unit-free and bounded: it costs
// at most CostWeight of quality, so equal quality goes to the cheaper
// candidate, and a clearly better candidate still beats a slightly
// cheaper one. With all candidates free the penalty is zero.
package eval
