package eval

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cadre-dev/cadre/internal/signal"
)

// Response is what the Gatekeeper checks: an agent's output and the facts
// the caller gathered around it. Gathering them (diffing the worktree,
// running commands) is I/O and belongs to the engine; the Gatekeeper only
// judges, so it stays a pure function.
type Response struct {
	// Text is the agent's output (the Markdown written to its output path).
	Text string
	// Files are the repository-relative paths the step changed, added or
	// deleted (both sides of a rename).
	Files []string
	// Commands maps a project command name (build, test, lint…) to its
	// exit code. A command that did not run is absent.
	Commands map[string]int
}

// Check is the outcome of one requirement.
type Check struct {
	Name   string // e.g. "signal", "section Summary", "command test"
	Passed bool
	Reason string // one line: what was found
}

// Result is the outcome of all the requirements that apply.
type Result struct {
	Passed bool // every check passed
	Checks []Check
}

// Score is the share of checks that passed, 0..1; 1 when nothing was checked.
func (r Result) Score() float64 {
	if len(r.Checks) == 0 {
		return 1
	}
	n := 0
	for _, c := range r.Checks {
		if c.Passed {
			n++
		}
	}
	return float64(n) / float64(len(r.Checks))
}

// Summary says in one line how the response fared and, when it failed,
// which checks failed and why.
func (r Result) Summary() string {
	n := 0
	var failed []string
	for _, c := range r.Checks {
		if c.Passed {
			n++
		} else {
			failed = append(failed, c.Name+": "+c.Reason)
		}
	}
	if r.Passed {
		return fmt.Sprintf("passed %d/%d checks", n, len(r.Checks))
	}
	return fmt.Sprintf("failed %d/%d checks: %s", len(r.Checks)-n, len(r.Checks), strings.Join(failed, "; "))
}

// Gatekeeper runs deterministic checks of a response against requirements,
// with no model: the cheap first stage of an evaluation, before the judge.
type Gatekeeper struct{}

// Validate checks r against every requirement req sets, in a fixed order
// (sections, signal, plan, diff, allowed files, forbidden paths, commands).
func (Gatekeeper) Validate(r Response, req Requirements) Result {
	var checks []Check
	add := func(name string, ok bool, reason string, args ...any) {
		checks = append(checks, Check{Name: name, Passed: ok, Reason: oneLine(fmt.Sprintf(reason, args...))})
	}
	heads := headings(r.Text)
	for _, s := range req.Sections {
		want := normHeading(s)
		if slices.Contains(heads, want) {
			add("section "+strings.TrimSpace(s), true, "heading found")
		} else {
			add("section "+strings.TrimSpace(s), false, "no heading %q", strings.TrimSpace(s))
		}
	}
	// Results, Rating and Verdict need a block to read, so they imply one;
	// but an explicit "signal: false" turns every signal check off, or a
	// config could not switch off what a role's defaults ask of the block.
	offSignal := req.Signal != nil && !*req.Signal
	if !offSignal && (on(req.Signal) || len(req.Results) > 0 || on(req.Rating) || on(req.Verdict)) {
		checks = append(checks, checkSignal(r.Text, req)...)
	}
	if on(req.Plan) {
		p, err := signal.ParsePlan(r.Text)
		if err != nil {
			add("plan", false, "%v", err)
		} else {
			waves, _ := p.Waves() // ParsePlan has already refused cycles
			add("plan", true, "%d tasks in %d waves", len(p.Tasks), len(waves))
		}
	}
	files := make([]string, 0, len(r.Files))
	for _, f := range r.Files {
		if f = cleanPath(f); f != "" {
			files = append(files, f)
		}
	}
	if on(req.DiffNonEmpty) {
		add("diff_nonempty", len(files) > 0, "%d %s changed", len(files), map[bool]string{true: "file", false: "files"}[len(files) == 1])
	}
	if len(req.AllowedFiles) > 0 {
		var out []string
		for _, f := range files {
			if outside(f) || matchAny(req.AllowedFiles, f) == "" {
				out = append(out, f)
			}
		}
		add("allowed_files", len(out) == 0, "%s", listOr(out, "outside the task's files: ", "every changed file is among the task's files"))
	}
	if len(req.ForbiddenPaths) > 0 {
		var bad []string
		for _, f := range files {
			switch pat := matchAny(req.ForbiddenPaths, f); {
			case outside(f):
				bad = append(bad, f+" (outside the repository)")
			case pat != "" && !(on(req.AllowLockfiles) && isLockfile(f)):
				bad = append(bad, f+" ("+pat+")")
			}
		}
		add("forbidden_paths", len(bad) == 0, "%s", listOr(bad, "changed forbidden paths: ", "no forbidden path changed"))
	}
	for _, name := range req.Commands {
		code, ran := r.Commands[name]
		switch {
		case !ran:
			add("command "+name, false, "did not run")
		case code != 0:
			add("command "+name, false, "exited %d", code)
		default:
			add("command "+name, true, "exited 0")
		}
	}
	passed := true
	for _, c := range checks {
		passed = passed && c.Passed
	}
	return Result{Passed: passed, Checks: checks}
}

// checkSignal checks the SIGNAL BLOCK and the fields req asks of it.
func checkSignal(text string, req Requirements) []Check {
	s, err := signal.Parse(text)
	if err != nil {
		return []Check{{Name: "signal", Reason: oneLine(err.Error())}}
	}
	checks := []Check{{Name: "signal", Passed: true, Reason: "Result " + string(s.Result)}}
	if len(req.Results) > 0 {
		ok := slices.ContainsFunc(req.Results, func(want string) bool {
			w, ok := parseResult(want)
			return ok && w == s.Result
		})
		reason := "Result " + string(s.Result)
		if !ok {
			reason += " is not one of " + strings.Join(req.Results, ", ")
		}
		checks = append(checks, Check{Name: "signal result", Passed: ok, Reason: reason})
	}
	if on(req.Rating) {
		c := Check{Name: "signal rating", Reason: "no Rating in the SIGNAL BLOCK"}
		if s.Rating != nil {
			c = Check{Name: "signal rating", Passed: true, Reason: fmt.Sprintf("Rating %d", *s.Rating)}
		}
		checks = append(checks, c)
	}
	if on(req.Verdict) {
		c := Check{Name: "signal verdict", Reason: "no Verdict in the SIGNAL BLOCK"}
		if s.Verdict != "" {
			c = Check{Name: "signal verdict", Passed: true, Reason: "Verdict " + s.Verdict}
		}
		checks = append(checks, c)
	}
	return checks
}

// headings returns the normalised text of the Markdown headings in text:
// ATX headings ("## Summary") and, because models often write them so, a
// line that is bold and nothing else ("**Summary**"). Lines inside code
// fences are not headings.
func headings(text string) []string {
	var out []string
	fence := ""
	for _, ln := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(ln)
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		switch {
		case strings.HasPrefix(t, "```"), strings.HasPrefix(t, "~~~"):
			fence = t[:3]
		case strings.HasPrefix(t, "#"):
			rest := strings.TrimLeft(t, "#")
			if len(t)-len(rest) <= 6 && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
				out = append(out, normHeading(strings.TrimRight(rest, "# \t")))
			}
		case len(t) > 4 && (strings.HasPrefix(t, "**") && strings.HasSuffix(t, "**") ||
			strings.HasPrefix(t, "__") && strings.HasSuffix(t, "__")):
			out = append(out, normHeading(t[2:len(t)-2]))
		}
	}
	return out
}

// normHeading folds a heading for comparison: case, surrounding markup,
// a trailing colon and runs of spaces do not count.
func normHeading(s string) string {
	s = strings.Trim(strings.TrimSpace(s), "*_`")
	s = strings.TrimSuffix(strings.TrimSpace(s), ":")
	s = strings.Trim(strings.TrimSpace(s), "*_`")
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// listOr returns prefix followed by at most five items (and how many more),
// or none when there are no items.
func listOr(items []string, prefix, none string) string {
	if len(items) == 0 {
		return none
	}
	const max = 5
	s := prefix + strings.Join(items[:min(len(items), max)], ", ")
	if len(items) > max {
		s += fmt.Sprintf(" and %d more", len(items)-max)
	}
	return s
}

// oneLine keeps a reason on one line, so Summary stays one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
