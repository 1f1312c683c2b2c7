package eval

import (
	ieval "github.com/cadre-dev/cadre/internal/eval"
)

// The evaluation types are the engine's own, aliased, so a program and the
// cadre command judge work by one implementation.
type (
	// Requirements are the Gatekeeper's checks (cadre.yaml roles.NAME.requirements).
	Requirements = ieval.Requirements
	// Response is a response with the facts around it: changed files and
	// project commands' exit codes, for the diff and command checks.
	Response = ieval.Response
	// Result is the Gatekeeper's outcome: one Check per requirement.
	Result = ieval.Result
	// Check is the outcome of one requirement.
	Check = ieval.Check
	// Rubric maps a criterion to what it means; a judge scores each 0..10.
	Rubric = ieval.Rubric
	// Judgement is a judge's scores for one response.
	Judgement = ieval.Judgement
	// Candidate is a runner, optionally with a model, the Selector may pick.
	Candidate = ieval.Candidate
	// Stats are a candidate's recorded evaluations for one role.
	Stats = ieval.Stats
)

// Bool returns a pointer to b, for the switches of Requirements.
func Bool(b bool) *bool { return ieval.Bool(b) }

// DefaultRequirements are the checks cadre applies to role's output when
// cadre.yaml sets none.
func DefaultRequirements(role string) Requirements { return ieval.DefaultRequirements(role) }

// DefaultRubric is the built-in rubric for role (a general one for a role
// it does not know); a copy the caller may change.
func DefaultRubric(role string) Rubric { return ieval.DefaultRubric(role) }

// ParseCandidate reads "runner" or "runner/model".
func ParseCandidate(s string) (Candidate, error) { return ieval.ParseCandidate(s) }

// Gatekeeper runs deterministic checks of a response, with no model: the
// cheap first stage of an evaluation, before the judge.
type Gatekeeper struct{}

// Validate checks a response text against req's text checks (sections,
// SIGNAL BLOCK, plan JSON). Requirements on the diff or on commands fail
// here, since a text alone has no changed files and ran no command; use
// ValidateWork for them.
func (Gatekeeper) Validate(response string, req Requirements) Result {
	return ieval.Gatekeeper{}.Validate(ieval.Response{Text: response}, req)
}

// ValidateWork checks a response with the files it changed and the exit
// codes of the project commands run after it.
func (Gatekeeper) ValidateWork(r Response, req Requirements) Result {
	return ieval.Gatekeeper{}.Validate(r, req)
}
