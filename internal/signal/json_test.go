package signal

import (
	"errors"
	"strings"
	"testing"
)

func plan(body string) string { return "Here is the plan.\n\n```json\n" + body + "\n```\n" }

func TestParsePlan(t *testing.T) {
	p, err := ParsePlan(plan(`{"tasks":[{"id":"a","title":"A","files":["x.go"],"depends_on":[],"acceptance_criteria":["ok"],"testable":true},{"id":"b","depends_on":["a"]},{"id":"c"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	waves, _ := p.Waves()
	var got []string
	for _, w := range waves {
		var ids []string
		for _, t := range w {
			ids = append(ids, t.ID)
		}
		got = append(got, strings.Join(ids, "+"))
	}
	if strings.Join(got, " | ") != "a+c | b" {
		t.Errorf("waves %v", got)
	}
	if p.Tasks[0].Files[0] != "x.go" || !p.Tasks[0].Testable {
		t.Errorf("task %+v", p.Tasks[0])
	}
}

func TestParsePlanErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"no block", "no ```json block"},
		{plan(`{"tasks":[]}`), "no tasks"},
		{plan(`{"tasks":[{"id":"a"},{"id":"a"}]}`), `"a" is used twice`},
		{plan(`{"tasks":[{"id":"a","depends_on":["zz"]}]}`), `"a" depends on unknown task "zz"`},
		{plan(`{"tasks":[{"id":"a","depends_on":["b"]},{"id":"b","depends_on":["a"]},{"id":"c"}]}`), "cycle: a, b"},
		{plan(`{"tasks":[{"id":"../x"}]}`), "not usable"},
		{plan(`{"tasks":[`), "invalid JSON"},
		{plan(`{"tasks":[{"id":"a","files":["src/a.go","../../.bashrc"]}]}`), `file "../../.bashrc" is not a path inside the repository`},
		{plan(`{"tasks":[{"id":"a","files":["/etc/passwd"]}]}`), `file "/etc/passwd" is not a path inside`},
		{plan(`{"tasks":[{"id":"a","files":["src\\..\\..\\x"]}]}`), `is not a path inside`},
		{plan(`{"tasks":[{"id":"a","files":[""]}]}`), `is not a path inside`},
	}
	for _, tt := range tests {
		_, err := ParsePlan(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParsePlan(%.30q) = %v, want %q", tt.in, err, tt.want)
		}
	}
	if _, err := ParsePlan("x"); !errors.Is(err, ErrNoJSON) {
		t.Errorf("err = %v", err)
	}
}

func TestParsePlanTakesLastBlock(t *testing.T) {
	p, err := ParsePlan(plan(`{"tasks":[{"id":"old"}]}`) + plan(`{"tasks":[{"id":"new"}]}`))
	if err != nil || p.Tasks[0].ID != "new" {
		t.Errorf("%+v %v", p, err)
	}
}

func TestParseTriage(t *testing.T) {
	tr, err := ParseTriage("```json\n{\"workflow\":\"STANDARD\",\"roles\":[\"Architect\",\"executor\"],\"reasoning\":\"r\",\"answer\":null}\n```")
	if err != nil || tr.Workflow != "standard" || tr.Roles[0] != "architect" || tr.Answer != nil {
		t.Errorf("%+v %v", tr, err)
	}
	tr, err = ParseTriage(`Decision: {"workflow":"quick","roles":[],"reasoning":"math","answer":"4"}`)
	if err != nil || tr.Workflow != "quick" || tr.Answer == nil || *tr.Answer != "4" {
		t.Errorf("%+v %v", tr, err)
	}
	for _, bad := range []string{"nothing", `{"roles":[]}`, "```json\n{bad\n```"} {
		if _, err := ParseTriage(bad); err == nil {
			t.Errorf("ParseTriage(%q) accepted", bad)
		}
	}
}

func FuzzParsePlan(f *testing.F) {
	f.Add(plan(`{"tasks":[{"id":"a","depends_on":["b"]},{"id":"b"}]}`))
	f.Add("```json\n{}\n```")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePlan(s)
		if err != nil {
			return
		}
		waves, err := p.Waves()
		n := 0
		for _, w := range waves {
			n += len(w)
		}
		if err != nil || n != len(p.Tasks) {
			t.Fatalf("accepted plan does not order: %v %d/%d", err, n, len(p.Tasks))
		}
	})
}
