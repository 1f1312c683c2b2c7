package eval

import (
	"math"
	"strings"
	"testing"
)

const okSignal = "\n### SIGNAL BLOCK\n- Agent: coder\n- Result: SUCCESS\n- Confidence: 8\n- Next: auditor\n"

func planText(body string) string { return "The plan.\n\n```json\n" + body + "\n```\n" + okSignal }

func TestGatekeeperValidate(t *testing.T) {
	tests := []struct {
		name string
		resp Response
		req  Requirements
		want []string // "name=ok" or "name=FAIL:reason substring", in order
	}{
		{"nothing required", Response{Text: "hi"}, Requirements{}, nil},
		{
			"signal present", Response{Text: "done" + okSignal}, Requirements{Signal: Bool(true)},
			[]string{"signal=ok"},
		},
		{
			"signal missing", Response{Text: "done"}, Requirements{Signal: Bool(true)},
			[]string{"signal=FAIL:no SIGNAL BLOCK"},
		},
		{
			"signal switched off", Response{Text: "done"}, Requirements{Signal: Bool(false)}, nil,
		},
		{
			"signal false switches off what implies it", Response{Text: "done"},
			Merge(DefaultRequirements("code-reviewer"), Requirements{Signal: Bool(false), Results: []string{"PASS"}}), nil,
		},
		{
			"signal with a bad rating", Response{Text: "### SIGNAL BLOCK\n- Result: PASS\n- Rating: 11\n"},
			Requirements{Signal: Bool(true)}, []string{"signal=FAIL:out of range 0-10"},
		},
		{
			"allowed results", Response{Text: okSignal}, Requirements{Results: []string{"fail", "pass"}},
			[]string{"signal=ok", "signal result=FAIL:SUCCESS is not one of fail, pass"},
		},
		{
			"allowed results in other spellings", Response{Text: okSignal}, Requirements{Results: []string{"success"}},
			[]string{"signal=ok", "signal result=ok"},
		},
		{
			"rating and verdict", Response{Text: "### SIGNAL BLOCK\n- Result: PASS\n- Rating: 9\n"},
			Requirements{Rating: Bool(true), Verdict: Bool(true)},
			[]string{"signal=ok", "signal rating=ok", "signal verdict=FAIL:no Verdict"},
		},
		{
			"sections", Response{Text: "# Review\n\n## summary:\n\n**Findings**\n\n```\n## Tests\n```\n"},
			Requirements{Sections: []string{"Summary", "findings", "Tests"}},
			[]string{"section Summary=ok", "section findings=ok", "section Tests=FAIL:no heading \"Tests\""},
		},
		{
			"a heading needs a space after the hashes", Response{Text: "#Summary\n####### Summary\n"},
			Requirements{Sections: []string{"Summary"}}, []string{"section Summary=FAIL:no heading"},
		},
		{
			"valid plan", Response{Text: planText(`{"tasks":[{"id":"a"},{"id":"b","depends_on":["a"]},{"id":"c"}]}`)},
			Requirements{Plan: Bool(true)}, []string{"plan=ok:3 tasks in 2 waves"},
		},
		{
			"cyclic plan", Response{Text: planText(`{"tasks":[{"id":"a","depends_on":["b"]},{"id":"b","depends_on":["a"]}]}`)},
			Requirements{Plan: Bool(true)}, []string{"plan=FAIL:cycle: a, b"},
		},
		{
			"plan without json", Response{Text: "a plan in prose"}, Requirements{Plan: Bool(true)},
			[]string{"plan=FAIL:no ```json block"},
		},
		{
			"empty diff", Response{Files: []string{"", " "}}, Requirements{DiffNonEmpty: Bool(true)},
			[]string{"diff_nonempty=FAIL:0 files changed"},
		},
		{
			"diff inside the task's files",
			Response{Files: []string{"internal/a/a.go", "./internal/a/a_test.go"}},
			Requirements{DiffNonEmpty: Bool(true), AllowedFiles: []string{"internal/a/*.go"}},
			[]string{"diff_nonempty=ok:2 files", "allowed_files=ok"},
		},
		{
			"diff outside the task's files",
			Response{Files: []string{"internal/a/a.go", "internal/b/b.go", "../escape"}},
			Requirements{AllowedFiles: []string{"internal/a/a.go", "../**"}},
			[]string{"allowed_files=FAIL:outside the task's files: internal/b/b.go, ../escape"},
		},
		{
			"forbidden paths",
			Response{Files: []string{"main.go", ".github/workflows/ci.yml", "sub/AGENTS.md", "go.sum", "/etc/passwd"}},
			Requirements{ForbiddenPaths: DefaultForbiddenPaths},
			[]string{"forbidden_paths=FAIL:.github/workflows/ci.yml (.github/workflows/**), sub/AGENTS.md (**/AGENTS.md), go.sum (**/go.sum), /etc/passwd (outside the repository)"},
		},
		{
			"lockfiles allowed",
			Response{Files: []string{"go.sum", "web/package-lock.json"}},
			Requirements{ForbiddenPaths: DefaultForbiddenPaths, AllowLockfiles: Bool(true)},
			[]string{"forbidden_paths=ok"},
		},
		{
			"allowing lockfiles does not allow CI",
			Response{Files: []string{"go.sum", ".github/workflows/x.yml"}},
			Requirements{ForbiddenPaths: DefaultForbiddenPaths, AllowLockfiles: Bool(true)},
			[]string{"forbidden_paths=FAIL:changed forbidden paths: .github/workflows/x.yml"},
		},
		{
			"commands",
			Response{Commands: map[string]int{"build": 0, "test": 1}},
			Requirements{Commands: []string{"build", "test", "lint"}},
			[]string{"command build=ok", "command test=FAIL:exited 1", "command lint=FAIL:did not run"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Gatekeeper{}.Validate(tt.resp, tt.req)
			if len(res.Checks) != len(tt.want) {
				t.Fatalf("checks %+v, want %d: %v", res.Checks, len(tt.want), tt.want)
			}
			allOK := true
			for i, w := range tt.want {
				c := res.Checks[i]
				name, rest, _ := strings.Cut(w, "=")
				wantOK := strings.HasPrefix(rest, "ok")
				allOK = allOK && wantOK
				_, reason, _ := strings.Cut(rest, ":")
				if c.Name != name || c.Passed != wantOK || !strings.Contains(c.Reason, reason) {
					t.Errorf("check %d = %+v, want %s", i, c, w)
				}
				if strings.Contains(c.Reason, "\n") {
					t.Errorf("check %d reason spans lines: %q", i, c.Reason)
				}
			}
			if res.Passed != allOK {
				t.Errorf("Passed = %v, want %v", res.Passed, allOK)
			}
		})
	}
}

func TestResultScoreAndSummary(t *testing.T) {
	empty := Result{Passed: true}
	if empty.Score() != 1 || empty.Summary() != "passed 0/0 checks" {
		t.Errorf("empty: %v %q", empty.Score(), empty.Summary())
	}
	res := Gatekeeper{}.Validate(
		Response{Text: okSignal, Files: []string{"a.go", "go.sum"}, Commands: map[string]int{"build": 0, "test": 2}},
		DefaultRequirements("coder"),
	)
	// signal ok, diff ok, forbidden go.sum, build ok, test exit 2
	if math.Abs(res.Score()-0.6) > 1e-9 || res.Passed {
		t.Errorf("score %v passed %v: %+v", res.Score(), res.Passed, res.Checks)
	}
	want := "failed 2/5 checks: forbidden_paths: changed forbidden paths: go.sum (**/go.sum); command test: exited 2"
	if got := res.Summary(); got != want {
		t.Errorf("Summary = %q\nwant      %q", got, want)
	}
	ok := Gatekeeper{}.Validate(Response{Text: okSignal}, Requirements{Signal: Bool(true)})
	if !ok.Passed || ok.Summary() != "passed 1/1 checks" {
		t.Errorf("%+v %q", ok, ok.Summary())
	}
}

func TestListOrCapsTheList(t *testing.T) {
	got := listOr([]string{"a", "b", "c", "d", "e", "f", "g"}, "bad: ", "none")
	if got != "bad: a, b, c, d, e and 2 more" {
		t.Errorf("listOr = %q", got)
	}
}
