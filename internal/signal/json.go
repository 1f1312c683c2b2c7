package signal

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// ErrNoJSON is wrapped when a reply has no fenced ```json block.
var ErrNoJSON = errors.New("no ```json block")

var jsonFence = regexp.MustCompile("(?s)```json[ \t]*\r?\n(.*?)\r?\n[ \t]*```")

// lastJSON returns the body of the last fenced json block of text.
func lastJSON(text string) (string, error) {
	m := jsonFence.FindAllStringSubmatch(text, -1)
	if len(m) == 0 {
		return "", ErrNoJSON
	}
	return m[len(m)-1][1], nil
}

// PlanTask is one task of an implementation plan: the implementation-planner's
// reply carries one fenced json block {"tasks":[...]}, and the engine fans out
// one implementation chain per task, in dependency order.
type PlanTask struct {
	ID                 string   `json:"id"`
	Title              string   `json:"title"`
	Description        string   `json:"description"`
	Files              []string `json:"files"`
	DependsOn          []string `json:"depends_on"`
	AcceptanceCriteria []string `json:"acceptance_criteria"`
	Testable           bool     `json:"testable"`
}

// Plan is the implementation-planner's output.
type Plan struct {
	Tasks []PlanTask `json:"tasks"`
}

var taskIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ParsePlan reads the plan JSON from the last fenced json block of text and
// checks it: at least one task, unique usable ids, known dependencies, no
// cycle. Errors name the ids involved.
func ParsePlan(text string) (Plan, error) {
	var p Plan
	body, err := lastJSON(text)
	if err != nil {
		return p, fmt.Errorf("plan: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("plan: invalid JSON: %v", err)
	}
	if len(p.Tasks) == 0 {
		return p, errors.New("plan: no tasks")
	}
	ids := map[string]bool{}
	for i, t := range p.Tasks {
		if !taskIDRE.MatchString(t.ID) || strings.Contains(t.ID, "..") {
			return p, fmt.Errorf("plan: tasks[%d]: id %q is not usable (letters, digits, '.', '_', '-')", i, t.ID)
		}
		if ids[t.ID] {
			return p, fmt.Errorf("plan: task id %q is used twice", t.ID)
		}
		ids[t.ID] = true
		for _, f := range t.Files {
			if !localPath(f) {
				return p, fmt.Errorf("plan: task %q: file %q is not a path inside the repository (relative to its root, without ..)", t.ID, f)
			}
		}
	}
	for _, t := range p.Tasks {
		for _, d := range t.DependsOn {
			if !ids[d] {
				return p, fmt.Errorf("plan: task %q depends on unknown task %q", t.ID, d)
			}
		}
	}
	if _, err := p.Waves(); err != nil {
		return p, err
	}
	return p, nil
}

// Waves orders the tasks in dependency waves: every task comes in a wave
// after all its dependencies; tasks of one wave are independent. Plan order
// is kept inside a wave.
func (p Plan) Waves() ([][]PlanTask, error) {
	done := map[string]bool{}
	left := append([]PlanTask(nil), p.Tasks...)
	var waves [][]PlanTask
	for len(left) > 0 {
		var wave, rest []PlanTask
		for _, t := range left {
			ready := true
			for _, d := range t.DependsOn {
				ready = ready && done[d]
			}
			if ready {
				wave = append(wave, t)
			} else {
				rest = append(rest, t)
			}
		}
		if len(wave) == 0 {
			var ids []string
			for _, t := range rest {
				ids = append(ids, t.ID)
			}
			sort.Strings(ids)
			return nil, fmt.Errorf("plan: tasks depend on each other in a cycle: %s", strings.Join(ids, ", "))
		}
		for _, t := range wave {
			done[t.ID] = true
		}
		waves = append(waves, wave)
		left = rest
	}
	return waves, nil
}

// Triage is the triage role's routing decision, one JSON object
// {"workflow","roles","reasoning","answer"} (docs/workflows.md#triage).
type Triage struct {
	Workflow  string   `json:"workflow"`
	Roles     []string `json:"roles"`
	Reasoning string   `json:"reasoning"`
	Answer    *string  `json:"answer"`
}

// ParseTriage reads the triage JSON object: from the last fenced json block
// or, failing that, the reply itself. The workflow name is lower-cased.
func ParseTriage(text string) (Triage, error) {
	var t Triage
	body, err := lastJSON(text)
	if err != nil {
		body = strings.TrimSpace(text)
		if i, j := strings.Index(body, "{"), strings.LastIndex(body, "}"); i >= 0 && j > i {
			body = body[i : j+1]
		}
	}
	if err := json.Unmarshal([]byte(body), &t); err != nil {
		return t, fmt.Errorf("triage: invalid JSON: %v", err)
	}
	t.Workflow = strings.ToLower(strings.TrimSpace(t.Workflow))
	if t.Workflow == "" {
		return t, errors.New("triage: no workflow")
	}
	for i, r := range t.Roles {
		t.Roles[i] = strings.ToLower(strings.TrimSpace(r))
	}
	return t, nil
}

// localPath says whether f names a place inside the repository: relative
// to its root, never climbing out of it, on any system's separators.
func localPath(f string) bool {
	f = strings.ReplaceAll(f, "\\", "/")
	return f != "" && !strings.ContainsRune(f, 0) && filepath.IsLocal(filepath.FromSlash(f)) && !strings.HasPrefix(f, "/")
}
