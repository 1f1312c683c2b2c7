package eval

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cadre-dev/cadre/internal/signal"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// Requirements are the deterministic checks the Gatekeeper runs on a
// response. They load from cadre.yaml and bench files, so every field has a
// yaml and a json name.
//
// The switches are pointers so that an override can turn a built-in
// requirement off (false) as well as on (true); nil leaves it as it is.
// Likewise a list that is set, even to an empty list, replaces the base
// list in Merge; an absent (nil) list keeps it.
type Requirements struct {
	// Sections are Markdown headings the text must contain (any level,
	// case-insensitive), e.g. "Summary".
	Sections []string `yaml:"sections,omitempty" json:"sections,omitempty"`
	// Signal requires a SIGNAL BLOCK that signal.Parse accepts. Results,
	// Rating and Verdict imply it; false turns all four off.
	Signal *bool `yaml:"signal,omitempty" json:"signal,omitempty"`
	// Results, when set, are the Results the block may carry.
	Results []string `yaml:"results,omitempty" json:"results,omitempty"`
	// Rating requires the SIGNAL BLOCK to carry a Rating (reviewers).
	Rating *bool `yaml:"rating,omitempty" json:"rating,omitempty"`
	// Verdict requires the SIGNAL BLOCK to carry a Verdict (code-reviewer).
	Verdict *bool `yaml:"verdict,omitempty" json:"verdict,omitempty"`
	// Plan requires a valid plan JSON block: usable unique ids, known
	// dependencies, no cycle.
	Plan *bool `yaml:"plan,omitempty" json:"plan,omitempty"`
	// DiffNonEmpty requires at least one changed file.
	DiffNonEmpty *bool `yaml:"diff_nonempty,omitempty" json:"diff_nonempty,omitempty"`
	// AllowedFiles, when set, are the only paths the diff may touch:
	// usually the files the task lists. Glob patterns (see matchGlob).
	AllowedFiles []string `yaml:"allowed_files,omitempty" json:"allowed_files,omitempty"`
	// ForbiddenPaths are paths the diff must not touch.
	ForbiddenPaths []string `yaml:"forbidden_paths,omitempty" json:"forbidden_paths,omitempty"`
	// AllowLockfiles lets dependency lockfiles through ForbiddenPaths.
	AllowLockfiles *bool `yaml:"allow_lockfiles,omitempty" json:"allow_lockfiles,omitempty"`
	// Commands are project commands (build, test, lint…) that must have
	// run and exited 0.
	Commands []string `yaml:"commands,omitempty" json:"commands,omitempty"`
}

// Bool returns a pointer to b, for filling the switches of Requirements.
func Bool(b bool) *bool { return &b }

// on reports whether a switch is set to true.
func on(b *bool) bool { return b != nil && *b }

// Validate reports requirements that cannot be checked: unknown Results,
// malformed glob patterns, empty names. Errors name the yaml field, so a
// config loader can refuse the file with them.
func (r Requirements) Validate() error {
	var errs []error
	for _, res := range r.Results {
		if _, ok := parseResult(res); !ok {
			errs = append(errs, fmt.Errorf("results: %q is not a SIGNAL BLOCK Result", res))
		}
	}
	type named struct {
		field string
		list  []string
	}
	for _, n := range []named{{"allowed_files", r.AllowedFiles}, {"forbidden_paths", r.ForbiddenPaths}} {
		field := n.field
		for _, p := range n.list {
			if cleanPath(p) == "" {
				errs = append(errs, fmt.Errorf("%s: empty pattern", field))
			} else if err := checkPattern(p); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", field, err))
			}
		}
	}
	for _, n := range []named{{"sections", r.Sections}, {"commands", r.Commands}} {
		if slices.ContainsFunc(n.list, func(s string) bool { return strings.TrimSpace(s) == "" }) {
			errs = append(errs, fmt.Errorf("%s: empty name", n.field))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return joined(errs)
}

// joined is errors.Join on one line: config errors are printed as one.
type joined []error

func (j joined) Error() string {
	msgs := make([]string, len(j))
	for i, err := range j {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (j joined) Unwrap() []error { return j }

// parseResult reads a Result named in requirements, accepting the same
// spellings as a SIGNAL BLOCK does ("pass", "Clarification needed"), by
// asking the signal parser rather than copying its rules.
func parseResult(s string) (signal.Result, bool) {
	if strings.ContainsAny(s, "\r\n") {
		return "", false
	}
	sig, err := signal.Parse("### SIGNAL BLOCK\n- Result: " + s + "\n")
	return sig.Result, err == nil
}

// Merge returns base with the fields override sets replacing base's:
// a non-nil switch or list in override wins. Lists are copied, so the
// result shares no memory with either argument.
func Merge(base, override Requirements) Requirements {
	out := base
	pick := func(b, o *bool) *bool {
		if o != nil {
			return Bool(*o)
		}
		if b != nil {
			return Bool(*b)
		}
		return nil
	}
	list := func(b, o []string) []string {
		if o != nil {
			return append([]string{}, o...)
		}
		return slices.Clone(b)
	}
	out.Sections = list(base.Sections, override.Sections)
	out.Signal = pick(base.Signal, override.Signal)
	out.Results = list(base.Results, override.Results)
	out.Rating = pick(base.Rating, override.Rating)
	out.Verdict = pick(base.Verdict, override.Verdict)
	out.Plan = pick(base.Plan, override.Plan)
	out.DiffNonEmpty = pick(base.DiffNonEmpty, override.DiffNonEmpty)
	out.AllowedFiles = list(base.AllowedFiles, override.AllowedFiles)
	out.ForbiddenPaths = list(base.ForbiddenPaths, override.ForbiddenPaths)
	out.AllowLockfiles = pick(base.AllowLockfiles, override.AllowLockfiles)
	out.Commands = list(base.Commands, override.Commands)
	return out
}

// Roles that change the working tree. Their output is only worth something
// when the diff exists, stays out of forbidden paths and the project still
// builds and tests.
var (
	writers     = []string{"coder", "executor", "code-writer", "fix-surgeon", "actor"}
	testWriters = []string{"test-writer", "tester"}
)

// DefaultRequirements returns the built-in requirements for role. Every
// role owes a SIGNAL BLOCK that signal.Parse accepts; on top of that:
//
//   - implementation-planner: a valid plan JSON block;
//   - coder, executor, code-writer, fix-surgeon, actor: a non-empty diff,
//     no forbidden path touched, build and test passing;
//   - test-writer: the same; tester (whose tests may fail until the
//     executor makes them pass) without the commands;
//   - other reviewing roles (workflow.Reviewing): a Rating, and for the
//     code-reviewer a Verdict, since their gate reads them.
//
// No sections are required by default: the role prompts ask reviewers for
// a summary and findings but not for heading names, so a heading check
// would fail good reviews. Bench cases and config add them.
func DefaultRequirements(role string) Requirements {
	r := Requirements{Signal: Bool(true)}
	switch {
	case role == "implementation-planner":
		r.Plan = Bool(true)
	case slices.Contains(writers, role), slices.Contains(testWriters, role):
		r.DiffNonEmpty = Bool(true)
		r.ForbiddenPaths = slices.Clone(DefaultForbiddenPaths)
		if role != "tester" {
			r.Commands = []string{"build", "test"}
		}
	case workflow.IsReviewing(role):
		r.Rating = Bool(true)
		if role == "code-reviewer" {
			r.Verdict = Bool(true)
		}
	}
	return r
}
