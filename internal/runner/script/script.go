// Package script is the deterministic runner used by the demo and the tests:
// no model, a scenario file says what each (role, attempt, task) does. The
// format is documented in docs/script-runner.md.
package script

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/signal"
)

// Scenario is a script runner's whole behaviour.
type Scenario struct {
	Rules []Rule `yaml:"rules"`
}

// Rule is what happens when a step matches. The first matching rule wins.
type Rule struct {
	Role    string   `yaml:"role"`    // required; "*" matches any role
	Task    string   `yaml:"task"`    // item id; empty matches any
	Attempt int      `yaml:"attempt"` // nth invocation of the role for the item; 0 matches any
	Reask   *bool    `yaml:"reask"`   // match only the corrective re-ask (true) or only first asks (false)
	Actions []Action `yaml:"actions"`
	Say     string   `yaml:"say"`    // reply text printed before the signal block
	Signal  *Signal  `yaml:"signal"` // appended as a SIGNAL BLOCK; none when absent
	Exit    int      `yaml:"exit"`
	Stderr  string   `yaml:"stderr"`
	Usage   Usage    `yaml:"usage"`
	Model   string   `yaml:"model"` // the model the reply says answered, as agent CLIs report theirs
}

// Action changes the working tree or waits. Exactly one field is set.
type Action struct {
	Write   *FileText `yaml:"write"`
	Append  *FileText `yaml:"append"`
	Replace *Replace  `yaml:"replace"`
	Run     []string  `yaml:"run"`   // argv, run in the working tree
	Sleep   string    `yaml:"sleep"` // Go duration
}

// FileText is a file path (relative to the working tree) and its text.
type FileText struct {
	Path    string `yaml:"path"`
	Content string `yaml:"content"`
}

// Replace patches the first occurrence of Old with New.
type Replace struct {
	Path string `yaml:"path"`
	Old  string `yaml:"old"`
	New  string `yaml:"new"`
}

// Signal is the block the scripted agent ends its reply with.
type Signal struct {
	Result     string `yaml:"result"`
	Summary    string `yaml:"summary"`
	Confidence *int   `yaml:"confidence"`
	Next       string `yaml:"next"`
	Context    string `yaml:"context"`
	Rating     *int   `yaml:"rating"`
	Verdict    string `yaml:"verdict"`
	Signature  string `yaml:"signature"`
}

// Usage is the token account the scripted step reports.
type Usage struct {
	InputTokens      int64   `yaml:"input_tokens"`
	OutputTokens     int64   `yaml:"output_tokens"`
	CacheReadTokens  int64   `yaml:"cache_read_tokens"`
	CacheWriteTokens int64   `yaml:"cache_write_tokens"`
	CostUSD          float64 `yaml:"cost_usd"`
}

// Runner plays a scenario.
type Runner struct {
	name string
	file string // the scenario file, as configured
	sc   Scenario
}

// KeyedRoles are the roles the scenario's rules name.
func (r *Runner) KeyedRoles() []runner.KeyedRole {
	out := make([]runner.KeyedRole, 0, len(r.sc.Rules))
	for i, ru := range r.sc.Rules {
		out = append(out, runner.KeyedRole{Role: ru.Role, Where: fmt.Sprintf("%s: rules[%d].role", r.file, i)})
	}
	return out
}

// Type describes the script runner type: it plays the scenario its
// settings name and runs no program.
var Type = runner.Descriptor{Type: "script", Kind: runner.TypeScript}

// New loads the scenario named in the settings (relative to BaseDir).
func New(s runner.Settings) (runner.Runner, error) {
	if s.Scenario == "" {
		return nil, fmt.Errorf("runners.%s.scenario is empty: set the scenario file of the script runner", s.Name)
	}
	path := s.Scenario
	if !filepath.IsAbs(path) && s.BaseDir != "" {
		path = filepath.Join(s.BaseDir, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("runners.%s.scenario: %w", s.Name, err)
	}
	sc, err := Parse(s.Scenario, data)
	if err != nil {
		return nil, err
	}
	return &Runner{name: s.Name, file: s.Scenario, sc: sc}, nil
}

// Parse decodes and checks a scenario; name is used in error messages.
func Parse(name string, data []byte) (Scenario, error) {
	var sc Scenario
	if err := yaml.UnmarshalWithOptions(data, &sc, yaml.DisallowUnknownField()); err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil && ye.GetToken().Position != nil {
			// file:line as cadre.yaml's errors, not the library's "[line:column]".
			return sc, fmt.Errorf("%s:%d: %s", name, ye.GetToken().Position.Line, firstLine(strings.TrimSpace(ye.GetMessage())))
		}
		return sc, fmt.Errorf("%s: %s", name, firstLine(err.Error()))
	}
	for i, r := range sc.Rules {
		where := fmt.Sprintf("%s: rules[%d]", name, i)
		if r.Role == "" {
			return sc, fmt.Errorf("%s: role is required (use \"*\" for any role)", where)
		}
		for j, a := range r.Actions {
			if err := a.check(); err != nil {
				return sc, fmt.Errorf("%s.actions[%d]: %w", where, j, err)
			}
		}
	}
	return sc, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func (a Action) check() error {
	n := 0
	for _, set := range []bool{a.Write != nil, a.Append != nil, a.Replace != nil, len(a.Run) > 0, a.Sleep != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("set exactly one of write, append, replace, run, sleep")
	}
	if a.Sleep != "" {
		if _, err := time.ParseDuration(a.Sleep); err != nil {
			return fmt.Errorf("sleep: %w", err)
		}
	}
	return nil
}

// Name returns the configured instance name.
func (r *Runner) Name() string { return r.name }

// Capabilities: the script edits files and reports cost.
func (r *Runner) Capabilities() runner.Caps {
	return runner.Caps{EditsFiles: true, ReportsCost: true}
}

func (r *Runner) match(inv runner.Invocation) (Rule, bool) {
	for _, ru := range r.sc.Rules {
		if ru.Role != "*" && ru.Role != inv.Role {
			continue
		}
		if ru.Task != "" && ru.Task != inv.Item {
			continue
		}
		if ru.Attempt != 0 && ru.Attempt != visit(inv) {
			continue
		}
		if ru.Reask != nil && *ru.Reask != inv.Reask {
			continue
		}
		return ru, true
	}
	return Rule{}, false
}

// Run plays the first rule matching the invocation. No matching rule is an
// agent crash (exit 1) with a message saying which step had none.
func (r *Runner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	if inv.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, inv.Timeout)
		defer cancel()
	}
	ru, ok := r.match(inv)
	if !ok {
		msg := fmt.Sprintf("script: no rule for role %s, task %s, attempt %d", inv.Role, inv.Item, visit(inv))
		return runner.Result{ExitCode: 1, StderrTail: msg}, nil
	}
	var log strings.Builder
	for _, a := range ru.Actions {
		if err := apply(ctx, inv, a, &log); err != nil {
			if ctx.Err() != nil {
				return runner.Result{ExitCode: -1}, fmt.Errorf("runner %s: %w", r.name, ctx.Err())
			}
			return runner.Result{ExitCode: 1, StderrTail: err.Error()}, nil
		}
	}
	out := ru.Say
	if ru.Signal != nil {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += ru.Signal.format(inv.Role)
	}
	if inv.LogPath != "" {
		if err := os.MkdirAll(filepath.Dir(inv.LogPath), 0o755); err == nil {
			f, err := safefile.OpenAppend(filepath.Dir(inv.LogPath), inv.LogPath, 0o644)
			if err == nil {
				text := fmt.Sprintf("script %s: %s attempt %d\n%s%s%s", r.name, inv.Role, visit(inv), log.String(), out, ru.Stderr)
				f.WriteString(inv.Mask.String(text))
				f.Close()
			}
		}
	}
	u := ru.Usage
	return runner.Result{
		ExitCode:   ru.Exit,
		Output:     out,
		StderrTail: ru.Stderr,
		Model:      ru.Model,
		Usage: event.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD},
	}, nil
}

// confine resolves a scenario path inside the working tree; a path that
// escapes it (absolute, "..", or through a symlink anywhere along the way,
// including the file itself or a directory that MkdirAll would extend) is
// refused.
func confine(dir, p string) (string, error) {
	if p == "" || filepath.IsAbs(p) {
		return "", fmt.Errorf("path %q must be relative to the working tree", p)
	}
	full := filepath.Join(dir, p)
	if !inside(dir, full) {
		return "", fmt.Errorf("path %q leaves the working tree", p)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("working tree: %w", err)
	}
	// The longest existing prefix decides where new files and directories
	// will really land; EvalSymlinks resolves every link in it.
	existing := full
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil || !inside(root, real) {
		return "", fmt.Errorf("path %q leaves the working tree through a symlink", p)
	}
	return full, nil
}

func inside(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func apply(ctx context.Context, inv runner.Invocation, a Action, log *strings.Builder) error {
	dir := inv.Dir
	switch {
	case a.Write != nil, a.Append != nil:
		ft, flag := a.Write, os.O_CREATE|os.O_WRONLY|os.O_TRUNC
		if a.Append != nil {
			ft, flag = a.Append, os.O_CREATE|os.O_WRONLY|os.O_APPEND
		}
		full, err := confine(dir, ft.Path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(full, flag, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteString(ft.Content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		fmt.Fprintf(log, "wrote %s\n", ft.Path)
		return err
	case a.Replace != nil:
		full, err := confine(dir, a.Replace.Path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return err
		}
		if !strings.Contains(string(data), a.Replace.Old) {
			return fmt.Errorf("replace: %q not found in %s", a.Replace.Old, a.Replace.Path)
		}
		fmt.Fprintf(log, "patched %s\n", a.Replace.Path)
		return os.WriteFile(full, []byte(strings.Replace(string(data), a.Replace.Old, a.Replace.New, 1)), 0o644)
	case len(a.Run) > 0:
		// The step's CADRE_* variables (and git hardening), as every
		// agent gets them: a run action is as much the agent's doing.
		spec := proc.Spec{Path: a.Run[0], Args: a.Run[1:], Dir: dir,
			Env: proc.MinimalEnv(os.LookupEnv, nil, cliutil.Vars(inv)), OnStart: inv.OnStart, Grace: inv.Grace}
		release, err := cliutil.Confine(ctx, inv, &spec, nil, nil)
		if err != nil {
			return err
		}
		defer release()
		res, err := proc.Run(ctx, spec)
		fmt.Fprintf(log, "ran %v: exit %d\n%s", a.Run, res.ExitCode, res.Stdout)
		if err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("run %v: exit %d: %s", a.Run, res.ExitCode, res.StderrTail)
		}
		return nil
	default:
		d, _ := time.ParseDuration(a.Sleep)
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// format writes the block as agents write it: a ### SIGNAL BLOCK heading
// and one "- Key: value" line per field.
func (s Signal) format(role string) string {
	return "\n" + signal.Format(signal.Signal{Agent: role, Result: signal.Result(s.Result), LoopSummary: s.Summary,
		Confidence: s.Confidence, Next: s.Next, Context: s.Context, Rating: s.Rating, Verdict: s.Verdict, Signature: s.Signature})
}

// visit is the nth invocation of the role for the item, which scenario
// rules match as their attempt.
func visit(inv runner.Invocation) int {
	if inv.Visit > 0 {
		return inv.Visit
	}
	return inv.Attempt
}
