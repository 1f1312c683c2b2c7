package eval

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var testRubricSmall = Rubric{"correctness": "right", "tests": "tested", "Code Quality": "clean"}

func TestParseJudgement(t *testing.T) {
	tests := []struct {
		name string
		text string
		want Judgement
	}{
		{
			"plain object",
			`{"scores":{"correctness":8,"tests":6,"Code Quality":7},"overall":7,"reasoning":"ok"}`,
			Judgement{Scores: map[string]float64{"correctness": 8, "tests": 6, "Code Quality": 7}, Overall: 7, Reasoning: "ok"},
		},
		{
			"fenced, among prose, keys in other spellings",
			"Here is my judgement.\n\n```json\n{\"Scores\": {\"Correctness\": 9, \"TESTS\": 5, \"code_quality\": 7},\n \"Overall\": 8, \"Reasoning\": \"fine\"}\n```\nThanks!",
			Judgement{Scores: map[string]float64{"correctness": 9, "tests": 5, "Code Quality": 7}, Overall: 8, Reasoning: "fine"},
		},
		{
			"floats, numeric strings, N/10 and trailing commas",
			`{"scores":{"correctness":7.5,"tests":"6","code-quality":"9/10",},"overall":" 8 ",}`,
			Judgement{Scores: map[string]float64{"correctness": 7.5, "tests": 6, "Code Quality": 9}, Overall: 8},
		},
		{
			"missing overall is the mean",
			`{"scores":{"correctness":9,"tests":6,"code quality":6}}`,
			Judgement{Scores: map[string]float64{"correctness": 9, "tests": 6, "Code Quality": 6}, Overall: 7},
		},
		{
			"null overall is the mean",
			`{"scores":{"correctness":10,"tests":0,"code quality":5},"overall":null,"reasoning":null}`,
			Judgement{Scores: map[string]float64{"correctness": 10, "tests": 0, "Code Quality": 5}, Overall: 5},
		},
		{
			"the last object wins over a quoted example",
			`Format: {"scores":{"correctness":0,"tests":0,"code quality":0},"overall":0}` + "\nMine:\n" +
				`{"scores":{"correctness":8,"tests":8,"code quality":8},"overall":9}`,
			Judgement{Scores: map[string]float64{"correctness": 8, "tests": 8, "Code Quality": 8}, Overall: 9},
		},
		{
			"an unmatched brace in the prose before it",
			`I think { this is good. {"scores":{"correctness":8,"tests":7,"code quality":6},"overall":7,"reasoning":"a } in {text}"}`,
			Judgement{Scores: map[string]float64{"correctness": 8, "tests": 7, "Code Quality": 6}, Overall: 7, Reasoning: "a } in {text}"},
		},
		{
			"criteria outside the rubric are ignored",
			`{"scores":{"correctness":8,"tests":7,"code quality":6,"style":11},"overall":7}`,
			Judgement{Scores: map[string]float64{"correctness": 8, "tests": 7, "Code Quality": 6}, Overall: 7},
		},
		{
			"reasoning that is not a string is kept as written",
			`{"scores":{"correctness":8,"tests":7,"code quality":6},"overall":7,"reasoning":["a","b"]}`,
			Judgement{Scores: map[string]float64{"correctness": 8, "tests": 7, "Code Quality": 6}, Overall: 7, Reasoning: `["a","b"]`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJudgement(tt.text, testRubricSmall)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseJudgementEmptyRubricKeepsEveryScore(t *testing.T) {
	got, err := ParseJudgement(`{"scores":{"a":2,"B":4}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Judgement{Scores: map[string]float64{"a": 2, "B": 4}, Overall: 3}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got.Quality() != 0.3 {
		t.Errorf("Quality = %v", got.Quality())
	}
}

func TestParseJudgementErrors(t *testing.T) {
	full := `"correctness":8,"tests":7,"code quality":6`
	tests := []struct {
		name, text, want string
	}{
		{"no json", "It is good, 8/10.", `no JSON object with "scores"`},
		{"object without scores", `{"overall":8}`, `no JSON object with "scores"`},
		{"missing criteria are named", `{"scores":{"correctness":8},"overall":8}`, `not scored: "Code Quality", "tests"`},
		{"score above range", `{"scores":{"correctness":12,"tests":7,"code quality":6}}`, `score for "correctness" is 12, outside 0-10`},
		{"negative score", `{"scores":{"correctness":8,"tests":-1,"code quality":6}}`, `score for "tests" is -1, outside 0-10`},
		{"overall above range", `{"scores":{` + full + `},"overall":10.5}`, "overall is 10.5, outside 0-10"},
		{"score not a number", `{"scores":{"correctness":"good","tests":7,"code quality":6}}`, `score for "correctness" is not a number: "good"`},
		{"NaN string", `{"scores":{"correctness":"NaN","tests":7,"code quality":6}}`, "is not a number"},
		{"Inf string", `{"scores":{` + full + `},"overall":"+Inf"}`, "overall is not a number"},
		{"huge number", `{"scores":{` + full + `},"overall":1e999}`, "overall is not a number"},
		{"bool score", `{"scores":{"correctness":true,"tests":7,"code quality":6}}`, "is not a number: true"},
		{"scores not an object", `{"scores":[8,7,6]}`, `"scores" is not an object`},
		{"scored twice", `{"scores":{"tests":7,"Tests":8,"correctness":1,"code quality":1}}`, `"tests" is scored twice`},
		{"broken JSON", "```json\n{\"scores\":{\"correctness\":8 \"tests\":7}}\n```", "invalid JSON"},
		{"unclosed", `{"scores":{` + full + `},"overall":7`, "not closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseJudgement(tt.text, testRubricSmall)
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || !strings.HasPrefix(msg, "judgement: ") || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line starting \"judgement: \" containing %q", msg, tt.want)
			}
		})
	}
	if _, err := ParseJudgement("nothing", testRubricSmall); !errors.Is(err, ErrNoJudgement) {
		t.Errorf("%v does not wrap ErrNoJudgement", err)
	}
	if _, err := ParseJudgement(`{"scores":{}}`, nil); err == nil || !strings.Contains(err.Error(), `no scores and no "overall"`) {
		t.Errorf("empty scores and rubric: %v", err)
	}
	if _, err := ParseJudgement(`{"scores":{"a":1}}`, Rubric{"a b": "", "A_B": ""}); err == nil || !strings.Contains(err.Error(), "same criterion") {
		t.Errorf("ambiguous rubric: %v", err)
	}
}

func TestParseJudgementBoundsItsWork(t *testing.T) {
	// Many unmatched braces before the answer: the parser gives up after
	// maxCandidates tries instead of scanning quadratically.
	text := `{"scores":{"correctness":8,"tests":8,"code quality":8}}` + strings.Repeat("{", 50000)
	if _, err := ParseJudgement(text, testRubricSmall); !errors.Is(err, ErrNoJudgement) {
		t.Errorf("err = %v", err)
	}
}

func TestReaskPrompt(t *testing.T) {
	if ReaskPrompt(nil) != "" {
		t.Error("nil error gives a prompt")
	}
	_, err := ParseJudgement(`{"scores":{"correctness":8}}`, testRubricSmall)
	p := ReaskPrompt(err)
	for _, want := range []string{`not scored: "Code Quality", "tests"`, `{"scores":{"<criterion>":N},"overall":N,"reasoning":"..."}`, "0 to 10"} {
		if !strings.Contains(p, want) {
			t.Errorf("ReaskPrompt = %q, want it to contain %q", p, want)
		}
	}
}

func FuzzParseJudgement(f *testing.F) {
	f.Add(`{"scores":{"correctness":8,"tests":6,"code quality":7},"overall":7,"reasoning":"ok"}`)
	f.Add("```json\n{\"Scores\":{\"Correctness\":\"9/10\",\"tests\":5.5,\"code_quality\":\"7\",},}\n```")
	f.Add(`prose { {"scores":{"correctness":"1e1","tests":0,"code quality":10},"overall":"NaN"}`)
	f.Add(`{"scores":{"correctness":-0,"tests":"0x1p3","code quality":1e-320}}`)
	f.Add(`{"a":"\"}{\\","scores":{"tests":"8/10"}}`)
	f.Fuzz(func(t *testing.T, text string) {
		for _, rubric := range []Rubric{testRubricSmall, nil} {
			j, err := ParseJudgement(text, rubric)
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("multi-line error %q", err)
				}
				continue
			}
			in := func(v float64) bool { return v >= 0 && v <= 10 && !math.IsNaN(v) }
			if !in(j.Overall) {
				t.Fatalf("overall %v out of range", j.Overall)
			}
			for k, v := range j.Scores {
				if !in(v) {
					t.Fatalf("score %q = %v out of range", k, v)
				}
			}
			for _, c := range rubric.Criteria() {
				if _, ok := j.Scores[c]; !ok {
					t.Fatalf("criterion %q missing without an error", c)
				}
			}
			if rubric != nil && len(j.Scores) != len(rubric) {
				t.Fatalf("scores %v beyond the rubric", j.Scores)
			}
		}
	})
}
