package cliutil

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/sandbox"
)

// Call is how a runner runs its CLI for one step.
type Call struct {
	Args  []string
	Stdin io.Reader // the prompt, when it goes on stdin
	// Set are the variables the runner sets for its CLI, over the
	// CADRE_* ones of Vars.
	Set map[string]string
	// PromptFlag is how the last argument carries the prompt ("--prompt=",
	// or "" for the bare prompt), so the log shows only its length; a
	// prompt on stdin is shown as a redirection.
	PromptFlag string
	// OnLine reads each line of output as it comes.
	OnLine func(stream, line string)
	// Then, when set, is called once the process has ended and before a
	// sandbox's fresh home is removed, so a runner can read what the CLI
	// left there (its session log): hostPath turns a path as the agent
	// saw it into where that file is on the host; log is the step's.
	Then func(log io.Writer, hostPath func(string) string)
	// Result reads the step's result once the CLI has ended, from what it
	// printed and the code it exited with (which Step sets in the result,
	// with the tail of its stderr), and the failure the agent reported,
	// nil for none.
	Result func(stdout []byte, exitCode int) (runner.Result, *runner.Error)
}

// Step runs the CLI once for inv as c says: in inv.Dir, within
// inv.Timeout, confined by inv.Sandbox, its output appended to the step's
// log after the command line. The error is Run's (see Outcome).
func (a *Agent) Step(ctx context.Context, inv runner.Invocation, c Call) (runner.Result, error) {
	log, err := a.OpenLog(inv)
	if err != nil {
		return runner.Result{}, err
	}
	defer log.Close()
	set := Vars(inv)
	maps.Copy(set, c.Set)
	var then func(func(string) string)
	if c.Then != nil {
		then = func(hostPath func(string) string) { c.Then(log, hostPath) }
	}
	// What the CLI printed is masked before anything reads it, so no
	// message cut from it (a note, a reported failure, the tail of its
	// stderr) can keep part of a secret the cut hid from the mask.
	onLine := c.OnLine
	if onLine != nil && inv.Mask.Enabled() {
		onLine = func(stream, line string) { c.OnLine(stream, inv.Mask.String(line)) }
	}
	res, err := a.exec(ctx, inv, log, c.PromptFlag, proc.Spec{Args: c.Args, Env: a.Env(set), Stdin: c.Stdin, OnLine: onLine}, then)
	out, failure := c.Result(inv.Mask.Bytes(res.Stdout), res.ExitCode)
	out.ExitCode, out.StderrTail = res.ExitCode, inv.Mask.String(res.StderrTail)
	return out, a.Outcome(err, failure)
}

// exec runs the CLI for inv with spec's args, environment, stdin and line
// handler: in inv.Dir, within inv.Timeout, its output appended to log
// after the command line (see Call.PromptFlag), then calls then, when set
// (see Call.Then).
func (a *Agent) exec(ctx context.Context, inv runner.Invocation, log io.Writer, promptFlag string, spec proc.Spec, then func(hostPath func(string) string)) (proc.Result, error) {
	// The message is the whole text, or the user text of a runner that
	// passes the instructions apart, which are shown by length too.
	prompt, args := inv.Text(), spec.Args
	if n := len(args); n > 0 && args[n-1] == promptFlag+inv.UserText() {
		prompt = inv.UserText()
	}
	if inv.Instructions != "" && slices.Contains(args, inv.Instructions) {
		args = slices.Clone(args)
		for i, v := range args {
			if v == inv.Instructions {
				args[i] = fmt.Sprintf("<instructions, %d bytes>", len(v))
			}
		}
		if spec.Stdin != nil {
			prompt = inv.UserText()
		}
	}
	fmt.Fprintf(log, "$ %s\n", CommandLine(a.Command, args, promptFlag, prompt, spec.Stdin != nil))
	spec.Path, spec.Dir, spec.Log, spec.Timeout, spec.OnStart = a.Command, inv.Dir, log, inv.Timeout, inv.OnStart
	spec.Grace = inv.Grace
	hosts := a.Hosts
	if a.URL != "" {
		hosts = []string{a.URL}
	}
	prep, err := confine(ctx, inv, &spec, a.Home, hosts)
	if err != nil {
		return proc.Result{ExitCode: -1}, err
	}
	if prep != nil {
		defer prep.Close()
	}
	res, err := proc.Run(ctx, spec)
	if then != nil {
		then(func(p string) string { return hostPath(prep, p) })
	}
	return res, err
}

// hostPath is where a file the agent saw at p is on the host: in a
// sandbox's fresh home when p lies in the home it was mounted over.
func hostPath(prep *sandbox.Prepared, p string) string {
	if prep == nil || prep.Sandbox.Home == "" {
		return p
	}
	home := prep.Sandbox.HomePath
	if home == "" {
		home = prep.Sandbox.Home
	}
	rel, err := filepath.Rel(home, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return p
	}
	return filepath.Join(prep.Sandbox.Home, rel)
}

// Confine puts spec in the step's sandbox when inv asks for one: the
// working tree and the output file's directory writable, the context
// file's readable, home a fresh directory holding only the home files
// listed, and under network: model-only only hosts (URLs or host:port) and
// sandbox.allow_hosts reachable. release removes what it set up once the
// process is done.
func Confine(ctx context.Context, inv runner.Invocation, spec *proc.Spec, home, hosts []string) (release func(), err error) {
	prep, err := confine(ctx, inv, spec, home, hosts)
	if err != nil {
		return nil, err
	}
	if prep == nil {
		return func() {}, nil
	}
	return prep.Close, nil
}

// confine is Confine returning the prepared sandbox, nil for none.
func confine(ctx context.Context, inv runner.Invocation, spec *proc.Spec, home, hosts []string) (*sandbox.Prepared, error) {
	if inv.Sandbox == nil {
		return nil, nil
	}
	st := sandbox.Step{Dir: inv.Dir, HomeFiles: home, Hosts: hosts, Env: spec.Env}
	if inv.OutputPath != "" {
		st.Writable = append(st.Writable, filepath.Dir(inv.OutputPath))
	}
	if inv.ContextPath != "" {
		st.Readable = append(st.Readable, filepath.Dir(inv.ContextPath))
	}
	p, err := inv.Sandbox.Prepare(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("prepare the sandbox: %w", err)
	}
	spec.Sandbox = p.Sandbox
	spec.Env = proc.SetEnv(spec.Env, p.Env)
	if spec.Log != nil {
		// The transcript says how the agent was confined, so a reader of
		// a refused write or connection knows why.
		fmt.Fprintf(spec.Log, "[cadre: sandboxed by bubblewrap, network %s]\n", inv.Sandbox.Network)
	}
	return p, nil
}

// Vars are the exec runner's CADRE_* variables, which every agent gets, so
// its shell tools can find the step's files, and inv.GitConfig for its git. The map is the caller's to add
// to.
func Vars(inv runner.Invocation) map[string]string {
	vars := map[string]string{
		"CADRE_CONTEXT":  inv.ContextPath,
		"CADRE_OUTPUT":   inv.OutputPath,
		"CADRE_ROLE":     inv.Role,
		"CADRE_ITEM":     inv.Item,
		"CADRE_STEP":     inv.Step,
		"CADRE_ATTEMPT":  strconv.Itoa(inv.Attempt),
		"CADRE_WORKTREE": inv.Dir,
	}
	// git reads GIT_CONFIG_COUNT/KEY_n/VALUE_n as configuration given on
	// its command line: it wins over the repository's own.
	if len(inv.GitConfig) > 0 {
		vars["GIT_CONFIG_COUNT"] = strconv.Itoa(len(inv.GitConfig))
		for i, kv := range inv.GitConfig {
			k, v, _ := strings.Cut(kv, "=")
			vars["GIT_CONFIG_KEY_"+strconv.Itoa(i)] = k
			vars["GIT_CONFIG_VALUE_"+strconv.Itoa(i)] = v
		}
	}
	return vars
}
