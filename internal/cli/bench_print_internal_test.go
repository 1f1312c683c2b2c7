package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/bench"
)

func TestBenchProgress(t *testing.T) {
	job := func(rep int) bench.Job {
		return bench.Job{Case: bench.Case{Role: "executor", Name: "fizzbuzz"}, Runner: "claude", Rep: rep}
	}
	steps := []bench.Progress{
		{Done: 1, Total: 4, Job: job(1), Outcome: bench.Outcome{Passed: true, Score: 0.8}},
		{Done: 1, Total: 4, Job: job(2), Err: errors.New("judge: no JSON")},
		{Done: 2, Total: 4, Job: job(3)},
	}

	var tty bytes.Buffer
	p := newBenchProgress(&tty, true)
	for _, s := range steps {
		p.report(s)
	}
	p.end()
	got := tty.String()
	// The bar redraws in place; an error gets a line of its own.
	for _, want := range []string{"\r\x1b[K[#####...............] 1/4 executor/fizzbuzz claude",
		"\r\x1b[Kexecutor/fizzbuzz claude#2: judge: no JSON\n", "[##########..........] 2/4 executor/fizzbuzz claude#3"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output %q lacks %q", got, want)
		}
	}
	if !strings.HasSuffix(got, "\n") {
		t.Errorf("terminal output %q does not end its line", got)
	}

	var plain bytes.Buffer
	p = newBenchProgress(&plain, false)
	for _, s := range steps {
		p.report(s)
	}
	p.end()
	want := "[1/4] executor/fizzbuzz claude: passed, score 8.0, $0.0000, 0s\n" +
		"[1/4] executor/fizzbuzz claude#2: not evaluated: judge: no JSON\n" +
		"[2/4] executor/fizzbuzz claude#3: failed, $0.0000, 0s\n"
	if plain.String() != want {
		t.Errorf("plain output\n%q\nwant\n%q", plain.String(), want)
	}
}
