package evalstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/store"
)

// Full is the whole evaluation of one agent step: every row a run writes
// for it (docs/evaluation.md), held together. Rows turns it into those
// rows, Group reads them back, so a program and a run record one format.
type Full struct {
	// Source is store.SourceRun or store.SourceBench; Run, Item and Step
	// name the evaluated step.
	Source, Run, Item, Step string
	Role                    string
	Candidate               eval.Candidate
	Gatekeeper              *GatekeeperVerdict // a gatekeeper row
	Judge                   *JudgeVerdict      // a judge row
	Review                  *ReviewVerdict     // a review row
	// Passed is the outcome: the work was accepted in the end (an
	// outcome row scoring 1 or 0); nil when not known yet.
	Passed *bool
	// Merged is what became of its pull request (a merged row).
	Merged *bool
	// Usage is the step's cost, time and tokens, recorded once: on the
	// outcome row, as a run does, else on the first row.
	Usage *Usage
}

// GatekeeperVerdict is the gatekeeper's checks of the step.
type GatekeeperVerdict struct {
	eval.Result
	Step string // the gatekeeper's own step in a run
}

// JudgeVerdict is a judge's scores of the step and whether it let the
// work pass.
type JudgeVerdict struct {
	eval.Judgement
	Passed bool
	Step   string // the judge's own step in a run
}

// ReviewVerdict is a reviewing role's rating and verdict of the step.
type ReviewVerdict struct {
	Reviewer, Step           string
	Result, Verdict, Summary string
	Passed                   bool
	Rating                   *float64 // 0..1 (the reviewer's rating / 10); nil when it gave none
}

// Usage is an evaluated step's cost, time and tokens.
type Usage struct {
	CostUSD                   float64
	LatencyMS                 int64
	InputTokens, OutputTokens int64
}

// The details of the rows, spelled as the engine writes them. The engine
// marshals maps, whose keys JSON sorts, so the fields are in that order
// and a program's rows are byte for byte a run's.
type (
	gateDetail struct {
		Checks []eval.Check `json:"checks"`
		Step   string       `json:"step"`
	}
	judgeDetail struct {
		Overall   float64            `json:"overall"`
		Reasoning string             `json:"reasoning"`
		Scores    map[string]float64 `json:"scores"`
		Step      string             `json:"step"`
	}
	reviewDetail struct {
		Result   string `json:"result"`
		Reviewer string `json:"reviewer"`
		Step     string `json:"step"`
		Summary  string `json:"summary"`
		Verdict  string `json:"verdict"`
	}
)

// Rows are f's score-store rows, in the order a run writes them.
func (f Full) Rows() ([]store.Evaluation, error) {
	if f.Role == "" || f.Candidate.Runner == "" {
		return nil, errors.New("a role and a candidate runner are required")
	}
	if f.Source != store.SourceRun && f.Source != store.SourceBench {
		return nil, fmt.Errorf("source %q: want %s or %s", f.Source, store.SourceRun, store.SourceBench)
	}
	base := store.Evaluation{Source: f.Source, RunID: f.Run, ItemID: f.Item, StepID: f.Step, Role: f.Role,
		Runner: f.Candidate.Runner, Model: f.Candidate.Model}
	var rows []store.Evaluation
	add := func(kind string, passed *bool, score *float64, detail any) error {
		r := base
		r.Kind, r.Passed, r.Score = kind, passed, score
		if detail != nil {
			var err error
			if r.Detail, err = json.Marshal(detail); err != nil {
				return fmt.Errorf("%s detail: %w", kind, err)
			}
		}
		rows = append(rows, r)
		return nil
	}
	if g := f.Gatekeeper; g != nil {
		s := g.Score()
		if err := add(store.KindGatekeeper, &g.Result.Passed, &s, gateDetail{Step: g.Step, Checks: g.Checks}); err != nil {
			return nil, err
		}
	}
	if r := f.Review; r != nil {
		if err := add(store.KindReview, &r.Passed, r.Rating, reviewDetail{Reviewer: r.Reviewer, Step: r.Step,
			Result: r.Result, Verdict: r.Verdict, Summary: r.Summary}); err != nil {
			return nil, err
		}
	}
	if j := f.Judge; j != nil {
		if err := checkJudgement(j.Judgement); err != nil {
			return nil, err
		}
		q := j.Quality()
		if err := add(store.KindJudge, &j.Passed, &q, judgeDetail{Step: j.Step, Scores: j.Scores, Overall: j.Overall,
			Reasoning: j.Reasoning}); err != nil {
			return nil, err
		}
	}
	for _, v := range []struct {
		kind string
		ok   *bool
	}{{store.KindOutcome, f.Passed}, {store.KindMerged, f.Merged}} {
		if v.ok != nil {
			s := 0.0
			if *v.ok {
				s = 1
			}
			_ = add(v.kind, v.ok, &s, nil) // no detail: cannot fail
		}
	}
	if len(rows) == 0 {
		return nil, errors.New("nothing to record: no gatekeeper, judge, review, outcome or merge")
	}
	f.putUsage(rows)
	return rows, nil
}

// putUsage gives the usage to the outcome row, else the first, so the
// store's means stay per step.
func (f Full) putUsage(rows []store.Evaluation) {
	if f.Usage == nil {
		return
	}
	u := &store.EvalUsage{CostUSD: math.Max(f.Usage.CostUSD, 0), LatencyMS: f.Usage.LatencyMS,
		InputTokens: f.Usage.InputTokens, OutputTokens: f.Usage.OutputTokens}
	for i := range rows {
		if rows[i].Kind == store.KindOutcome {
			rows[i].Usage = u
			return
		}
	}
	rows[0].Usage = u
}

// checkJudgement refuses scores the score store could not mean: outside
// 0..10 or not a number.
func checkJudgement(j eval.Judgement) error {
	bad := func(v float64) bool { return math.IsNaN(v) || v < 0 || v > 10 }
	if bad(j.Overall) {
		return fmt.Errorf("judgement overall %v: want 0..10", j.Overall)
	}
	for k, v := range j.Scores {
		if bad(v) {
			return fmt.Errorf("judgement score %s %v: want 0..10", k, v)
		}
	}
	return nil
}

// Group reads rows back into the evaluations they are parts of: one Full
// per evaluated step (source, run, item, step), in the order of the rows'
// first appearance. A row whose detail cannot be read is an error naming
// it; kinds a Full does not hold (bench) are left out.
func Group(rows []store.Evaluation) ([]Full, error) {
	type key struct{ source, run, item, step string }
	at := map[key]int{}
	var out []Full
	for _, r := range rows {
		k := key{r.Source, r.RunID, r.ItemID, r.StepID}
		if r.Kind == store.KindBench {
			continue
		}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, Full{Source: r.Source, Run: r.RunID, Item: r.ItemID, Step: r.StepID, Role: r.Role,
				Candidate: eval.Candidate{Runner: r.Runner, Model: r.Model}})
		}
		if err := out[i].add(r); err != nil {
			return nil, fmt.Errorf("evaluation %d (%s of %s): %w", r.ID, r.Kind, r.StepID, err)
		}
	}
	return out, nil
}

// add reads row r into f.
func (f *Full) add(r store.Evaluation) error {
	if r.Usage != nil {
		f.Usage = &Usage{CostUSD: r.Usage.CostUSD, LatencyMS: r.Usage.LatencyMS, InputTokens: r.Usage.InputTokens,
			OutputTokens: r.Usage.OutputTokens}
	}
	passed := r.Passed != nil && *r.Passed
	switch r.Kind {
	case store.KindGatekeeper:
		var d gateDetail
		if err := unmarshal(r.Detail, &d); err != nil {
			return err
		}
		f.Gatekeeper = &GatekeeperVerdict{Result: eval.Result{Passed: passed, Checks: d.Checks}, Step: d.Step}
	case store.KindJudge:
		var d judgeDetail
		if err := unmarshal(r.Detail, &d); err != nil {
			return err
		}
		f.Judge = &JudgeVerdict{Judgement: eval.Judgement{Scores: d.Scores, Overall: d.Overall, Reasoning: d.Reasoning},
			Passed: passed, Step: d.Step}
	case store.KindReview:
		var d reviewDetail
		if err := unmarshal(r.Detail, &d); err != nil {
			return err
		}
		f.Review = &ReviewVerdict{Reviewer: d.Reviewer, Step: d.Step, Result: d.Result, Verdict: d.Verdict,
			Summary: d.Summary, Passed: passed, Rating: r.Score}
	case store.KindOutcome:
		f.Passed = &passed
	case store.KindMerged:
		f.Merged = &passed
	}
	return nil
}

func unmarshal(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("read its detail: %w", err)
	}
	return nil
}

// Read returns the evaluations the store holds under f, oldest first.
func Read(ctx context.Context, st *store.Store, f store.EvalFilter) ([]Full, error) {
	rows, err := st.Evaluations(ctx, f, 0)
	if err != nil {
		return nil, err
	}
	// Evaluations lists newest first; a Full is built in recording order.
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return Group(rows)
}
