package eval

import (
	"encoding/json"
	"errors"
	"path"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"
)

func TestDefaultRequirements(t *testing.T) {
	coder := Requirements{
		Signal: Bool(true), DiffNonEmpty: Bool(true),
		ForbiddenPaths: DefaultForbiddenPaths, Commands: []string{"build", "test"},
	}
	tests := []struct {
		role string
		want Requirements
	}{
		{"implementation-planner", Requirements{Signal: Bool(true), Plan: Bool(true)}},
		{"coder", coder},
		{"executor", coder},
		{"code-writer", coder},
		{"fix-surgeon", coder},
		{"test-writer", coder},
		{"tester", Requirements{Signal: Bool(true), DiffNonEmpty: Bool(true), ForbiddenPaths: DefaultForbiddenPaths}},
		{"code-reviewer", Requirements{Signal: Bool(true), Rating: Bool(true), Verdict: Bool(true)}},
		{"auditor", Requirements{Signal: Bool(true), Rating: Bool(true)}},
		{"judge", Requirements{Signal: Bool(true), Rating: Bool(true)}},
		{"architect", Requirements{Signal: Bool(true)}},
		{"no-such-role", Requirements{Signal: Bool(true)}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, DefaultRequirements(tt.role)); diff != "" {
			t.Errorf("DefaultRequirements(%q) (-want +got):\n%s", tt.role, diff)
		}
	}
	// The defaults are copies: a caller editing one must not change the next.
	r := DefaultRequirements("coder")
	r.ForbiddenPaths[0] = "changed"
	if DefaultRequirements("coder").ForbiddenPaths[0] == "changed" || DefaultForbiddenPaths[0] == "changed" {
		t.Error("DefaultRequirements shares its forbidden paths")
	}
}

func TestMerge(t *testing.T) {
	base := DefaultRequirements("coder")
	tests := []struct {
		name     string
		override Requirements
		want     Requirements
	}{
		{"empty override keeps base", Requirements{}, base},
		{
			"switches turn off and on",
			Requirements{Signal: Bool(false), Plan: Bool(true), AllowLockfiles: Bool(true)},
			Requirements{
				Signal: Bool(false), Plan: Bool(true), AllowLockfiles: Bool(true), DiffNonEmpty: Bool(true),
				ForbiddenPaths: DefaultForbiddenPaths, Commands: []string{"build", "test"},
			},
		},
		{
			"set lists replace, an empty list clears",
			Requirements{Commands: []string{"lint"}, ForbiddenPaths: []string{}, Sections: []string{"Summary"}},
			Requirements{
				Signal: Bool(true), DiffNonEmpty: Bool(true), ForbiddenPaths: []string{},
				Commands: []string{"lint"}, Sections: []string{"Summary"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Merge(base, tt.override)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// The result owns its memory.
			if len(got.Commands) > 0 {
				got.Commands[0] = "x"
				if base.Commands[0] == "x" || (tt.override.Commands != nil && tt.override.Commands[0] == "x") {
					t.Error("Merge shares a list with its arguments")
				}
			}
			if got.Signal != nil {
				*got.Signal = !*got.Signal
				if *base.Signal != true || (tt.override.Signal != nil && *tt.override.Signal == *got.Signal) {
					t.Error("Merge shares a switch with its arguments")
				}
			}
		})
	}
}

func TestRequirementsLoadFromConfig(t *testing.T) {
	const y = `
signal: false
plan: true
diff_nonempty: true
allowed_files: [internal/a/*.go]
forbidden_paths: []
allow_lockfiles: true
commands: [build]
results: [PASS]
sections: [Summary]
rating: true
verdict: false
`
	var fromYAML Requirements
	if err := yaml.Unmarshal([]byte(y), &fromYAML); err != nil {
		t.Fatal(err)
	}
	want := Requirements{
		Signal: Bool(false), Plan: Bool(true), DiffNonEmpty: Bool(true),
		AllowedFiles: []string{"internal/a/*.go"}, ForbiddenPaths: []string{}, AllowLockfiles: Bool(true),
		Commands: []string{"build"}, Results: []string{"PASS"}, Sections: []string{"Summary"},
		Rating: Bool(true), Verdict: Bool(false),
	}
	if diff := cmp.Diff(want, fromYAML); diff != "" {
		t.Errorf("yaml (-want +got):\n%s", diff)
	}
	// An explicit empty list must survive loading, or an override could not
	// clear the default forbidden paths.
	if fromYAML.ForbiddenPaths == nil {
		t.Error("forbidden_paths: [] loaded as nil")
	}
	js, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON Requirements
	if err := json.Unmarshal(js, &fromJSON); err != nil {
		t.Fatal(err)
	}
	want.ForbiddenPaths = nil // omitempty drops an empty list in JSON
	if diff := cmp.Diff(want, fromJSON); diff != "" {
		t.Errorf("json round trip (-want +got):\n%s", diff)
	}
}

func TestRequirementsValidate(t *testing.T) {
	if err := DefaultRequirements("coder").Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	tests := []struct {
		req  Requirements
		want string
	}{
		{Requirements{Results: []string{"pass", "maybe"}}, `results: "maybe" is not a SIGNAL BLOCK Result`},
		{Requirements{Results: []string{"pass\n- Result: FAIL"}}, "not a SIGNAL BLOCK Result"},
		{Requirements{AllowedFiles: []string{"a/[x"}}, `allowed_files: pattern "a/[x"`},
		{Requirements{ForbiddenPaths: []string{" "}}, "forbidden_paths: empty pattern"},
		{Requirements{Commands: []string{"build", ""}}, "commands: empty name"},
		{
			Requirements{Sections: []string{""}, AllowedFiles: []string{"["}},
			`allowed_files: pattern "[": syntax error in pattern; sections: empty name`,
		},
	}
	for _, tt := range tests {
		err := tt.req.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Validate(%+v) = %v, want %q on one line", tt.req, err, tt.want)
		}
	}
	err := Requirements{AllowedFiles: []string{"["}}.Validate()
	if !errors.Is(err, path.ErrBadPattern) {
		t.Errorf("%v does not wrap path.ErrBadPattern", err)
	}
}
