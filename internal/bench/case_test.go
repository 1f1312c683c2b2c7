package bench_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/bench"
	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/role"
)

func knownRoles(t testing.TB) func(string) bool {
	t.Helper()
	reg, err := role.Load("")
	if err != nil {
		t.Fatal(err)
	}
	return func(name string) bool { _, err := reg.Get(name); return err == nil }
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, file, data string
		wantErr          string // substring; "" means success
		check            func(t *testing.T, c bench.Case)
	}{
		{name: "name defaults to the file stem", file: "dir/my-case.yaml", data: "role: architect\nprompt: Design it.\n",
			check: func(t *testing.T, c bench.Case) {
				if c.Name != "my-case" || c.ID() != "architect/my-case" {
					t.Errorf("name %q id %q, want my-case, architect/my-case", c.Name, c.ID())
				}
			}},
		{name: "requirements merge over the role's defaults", file: "x.yaml",
			data: "role: executor\nname: x\nprompt: Do it.\nrequirements:\n  sections: [Summary]\n  commands: [test]\n",
			check: func(t *testing.T, c bench.Case) {
				got := c.Checks()
				want := eval.DefaultRequirements("executor")
				want.Sections, want.Commands = []string{"Summary"}, []string{"test"}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("Checks() (-want +got):\n%s", diff)
				}
			}},
		{name: "a switch can turn a default off", file: "t.yaml", data: "role: triage\nprompt: Route it.\nrequirements: {signal: false}\n",
			check: func(t *testing.T, c bench.Case) {
				if r := c.Checks(); r.Signal == nil || *r.Signal {
					t.Errorf("signal = %v, want false", r.Signal)
				}
			}},
		{name: "rubric defaults to the role's", file: "c.yaml", data: "role: critic\nprompt: Review.\n",
			check: func(t *testing.T, c bench.Case) {
				if diff := cmp.Diff(eval.DefaultRubric("critic"), c.Criteria()); diff != "" {
					t.Errorf("Criteria() (-want +got):\n%s", diff)
				}
			}},
		{name: "own rubric replaces it", file: "c.yaml", data: "role: critic\nprompt: Review.\nrubric: {defect: finds the bug}\n",
			check: func(t *testing.T, c bench.Case) {
				if got := c.Criteria().Criteria(); !slices.Equal(got, []string{"defect"}) {
					t.Errorf("criteria = %v, want [defect]", got)
				}
			}},
		{name: "unknown field", file: "bad.yaml", data: "role: architect\nprompt: x\npromt: y\n", wantErr: `bad.yaml:3: `},
		{name: "unknown requirement", file: "bad.yaml", data: "role: architect\nprompt: x\nrequirements:\n  sectons: [A]\n", wantErr: `bad.yaml:4: `},
		{name: "wrong type", file: "bad.yaml", data: "role: architect\nprompt: [a, b]\n", wantErr: `bad.yaml:2: prompt: want text, got a list`},
		{name: "missing role", file: "bad.yaml", data: "prompt: x\n", wantErr: "bad.yaml: role: want the role"},
		{name: "unknown role", file: "bad.yaml", data: "prompt: x\nrole: wizard\n", wantErr: `bad.yaml:2: role: no role "wizard"`},
		{name: "missing prompt", file: "bad.yaml", data: "role: architect\n", wantErr: "bad.yaml: prompt: want the task"},
		{name: "bad name", file: "bad.yaml", data: "role: architect\nname: My Case\nprompt: x\n", wantErr: `bad.yaml:2: name: "My Case"`},
		{name: "bad result", file: "bad.yaml", data: "role: architect\nprompt: x\nrequirements: {results: [GREAT]}\n", wantErr: `bad.yaml:3: requirements: results: "GREAT"`},
		{name: "empty criterion", file: "bad.yaml", data: "role: architect\nprompt: x\nrubric:\n  a: ''\n", wantErr: "bad.yaml:4: rubric.a:"},
		{name: "empty command", file: "bad.yaml", data: "role: executor\nprompt: x\ncommands:\n  test: ' '\n", wantErr: "bad.yaml:4: commands.test: empty command"},
		{name: "fixture outside", file: "bad.yaml", data: "role: executor\nprompt: x\nfixture: ../up\n", wantErr: "bad.yaml:3: fixture:"},
	}
	roles := knownRoles(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := bench.Parse(tt.file, []byte(tt.data), roles)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

// Every built-in role has at least one built-in case, so cadre bench ROLE
// runs for each.
func TestBuiltinCasesCoverEveryRole(t *testing.T) {
	cases, err := bench.Builtin(knownRoles(t))
	if err != nil {
		t.Fatal(err)
	}
	roles := bench.Roles(cases)
	reg, err := role.Load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reg.List() {
		if !slices.Contains(roles, r.Name) {
			t.Errorf("no built-in case for %s (have %v)", r.Name, roles)
		}
	}
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadDirAndMerge(t *testing.T) {
	roles := knownRoles(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		// Same role and name as a built-in case: replaces it.
		"fizz.yaml":          "role: executor\nname: fizzbuzz\nprompt: Our own fizzbuzz.\nfixture: fx\n",
		"fx/main.sh":         "echo hi\n",
		"notes.txt":          "not a case",
		"extra.yml":          "role: architect\nprompt: Design.\n",
		"sub/ignored.yaml":   "role: nope\n", // only the top level holds cases
		"other/readme.md":    "",
		"fx/nested/deep.txt": "x",
	})
	repo, err := bench.LoadDir(dir, roles)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range repo {
		ids = append(ids, c.ID())
	}
	if !slices.Equal(ids, []string{"architect/extra", "executor/fizzbuzz"}) {
		t.Fatalf("LoadDir ids = %v", ids)
	}
	builtin, err := bench.Builtin(roles)
	if err != nil {
		t.Fatal(err)
	}
	all := bench.Merge(builtin, repo)
	if len(all) != len(builtin)+1 {
		t.Errorf("merged %d cases, want %d (one replaced, one added)", len(all), len(builtin)+1)
	}
	for _, c := range all {
		if c.ID() == "executor/fizzbuzz" && c.Prompt != "Our own fizzbuzz." {
			t.Errorf("executor/fizzbuzz comes from %s, want the repository's", c.Source)
		}
	}
	sel, err := bench.Select(all, []string{"architect"})
	if err != nil || len(sel) != 2 {
		t.Errorf("Select(architect) = %d cases, %v; want the built-in and the repository's", len(sel), err)
	}
	// Every built-in role has a case: the repository's alone lack one.
	if _, err := bench.Select(repo, []string{"debugger"}); err == nil || !strings.Contains(err.Error(), `no benchmark case for role "debugger"`) {
		t.Errorf("Select(debugger) err = %v", err)
	}
	if cs, err := bench.LoadDir(filepath.Join(dir, "absent"), roles); err != nil || cs != nil {
		t.Errorf("missing directory: %v, %v; want no cases", cs, err)
	}
}

func TestLoadDirErrors(t *testing.T) {
	roles := knownRoles(t)
	for name, files := range map[string]map[string]string{
		"fixture: \"nowhere\" is not a directory": {"a.yaml": "role: executor\nprompt: x\nfixture: nowhere\n"},
		"is also defined in":                      {"a.yaml": "role: architect\nname: same\nprompt: x\n", "b.yaml": "role: architect\nname: same\nprompt: y\n"},
		"a.yaml:2: unknown field":                 {"a.yaml": "role: architect\nrubrik: {}\nprompt: x\n"},
	} {
		dir := t.TempDir()
		writeFiles(t, dir, files)
		_, err := bench.LoadDir(dir, roles)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("err = %v, want containing %q", err, name)
		}
	}
}
