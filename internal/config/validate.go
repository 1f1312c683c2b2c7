package config

import (
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/builtin"
	"github.com/cadre-dev/cadre/internal/sandbox"
)

// validate checks the merged settings. Errors point at where the bad value
// came from: the file line, or the environment variable.
func (l *loader) validate(c *Config) error {
	for _, ck := range scalarChecks(c) {
		if ck.bad != "" {
			return l.invalid(ck.path, ck.bad)
		}
	}
	for _, check := range []func(*Config) error{l.prices, l.unavailable, func(c *Config) error { return l.notify(c.Notify) },
		l.github, l.tracker, l.follow, l.roles, l.runners} {
		if err := check(c); err != nil {
			return err
		}
	}
	return nil
}

// scalarCheck is a setting and what is wrong with its value ("" when
// nothing is).
type scalarCheck struct {
	path string
	bad  string
}

// scalarChecks checks the settings that hold one value each.
func scalarChecks(c *Config) []scalarCheck {
	return []scalarCheck{
		{"repository", repoProblem(c.Repository, c.Forge.Type != ForgeGitHub)},
		{"base_branch", nonEmpty(c.BaseBranch, "a branch name")},
		{"tasks_dir", tasksDirProblem(c.TasksDir)},
		{"defaults.runner", nonEmpty(c.Defaults.Runner, "a runner name")},
		{"defaults.workflow", nonEmpty(c.Defaults.Workflow, "a workflow name")},
		{"defaults.timeout", positive(c.Defaults.Timeout)},
		{"limits.parallel_issues", atLeast(c.Limits.ParallelIssues, 1)},
		{"limits.parallel_agents", atLeast(c.Limits.ParallelAgents, 1)},
		{"limits.budget_usd", budgetProblem(c.Limits.BudgetUSD)},
		{"limits.audit_pass_rating", rating(c.Limits.AuditPassRating)},
		{"limits.max_attempts", atLeast(c.Limits.MaxAttempts, 1)},
		{"limits.max_review_rounds", atLeast(c.Limits.MaxReviewRounds, 0)},
		{"limits.escalate_below_confidence", rating(c.Limits.EscalateBelowConfidence)},
		{"limits.max_insufficient_loops", atLeast(c.Limits.MaxInsufficientLoops, 0)},
		{"limits.max_iterations", atLeast(c.Limits.MaxIterations, 1)},
		{"limits.worktree_pool", atLeast(c.Limits.WorktreePool, 0)},
		{"limits.kill_grace", positive(c.Limits.KillGrace)},
		{"limits.max_run_duration", notNegative(c.Limits.MaxRunDuration)},
		{"github.api_url", urlProblem(c.GitHub.APIURL)},
		{"github.write_interval", notNegative(c.GitHub.WriteInterval)},
		{"github.query_state", queryStateProblem(c.GitHub.QueryState)},
		{"github.query_limit", atLeast(c.GitHub.QueryLimit, 0)},
		{"github.poll_interval", positive(c.GitHub.PollInterval)},
		{"forge.type", oneOfOrEmpty(c.Forge.Type, ForgeGitHub, ForgeGitLab)},
		{"forge.url", optionalURL(c.Forge.URL)},
		{"telemetry.otlp_endpoint", optionalURL(c.Telemetry.OTLPEndpoint)},
		{"telemetry.service_name", nonEmpty(c.Telemetry.ServiceName, "a service name")},
		{"tracker.type", oneOfOrEmpty(c.Tracker.Type, TrackerJira, TrackerLinear)},
		{"tracker.url", optionalURL(c.Tracker.URL)},
		{"gitlab.api_url", urlProblem(c.GitLab.APIURL)},
		{"gitlab.write_interval", notNegative(c.GitLab.WriteInterval)},
		{"gitlab.query_state", queryStateProblem(c.GitLab.QueryState)},
		{"gitlab.query_limit", atLeast(c.GitLab.QueryLimit, 0)},
		{"gitlab.poll_interval", positive(c.GitLab.PollInterval)},
		{"follow.ci_failed.rounds", atLeast(c.Follow.CIFailed.Rounds, 0)},
		{"follow.changes_requested.rounds", atLeast(c.Follow.ChangesRequested.Rounds, 0)},
		{"follow.conflict.rounds", atLeast(c.Follow.Conflict.Rounds, 0)},
		{"follow.merge", oneOf(c.Follow.Merge, MergeOff, "merge", "squash", "rebase")},
		{"follow.checks_timeout", positive(c.Follow.ChecksTimeout)},
		{"follow.pause_label", labelProblem(c.Follow.PauseLabel)},
		{"commit.format", oneOf(c.Commit.Format, "plain", "conventional")},
		{"sandbox.mode", oneOf(c.Sandbox.Mode, "auto", "none", "bwrap")},
		{"sandbox.network", networkProblem(c.Sandbox.Network)},
		{"engine", oneOf(c.Engine, EngineEmbedded, EngineTemporal)},
		{"temporal.address", hostPortProblem(c.Temporal.Address)},
		{"temporal.namespace", nonEmpty(c.Temporal.Namespace, "a namespace name")},
		{"temporal.task_queue", nonEmpty(c.Temporal.TaskQueue, "a task queue name")},
	}
}

// prices checks the price table's entries.
func (l *loader) prices(c *Config) error {
	for _, model := range slices.Sorted(maps.Keys(c.Prices)) {
		p := c.Prices[model]
		for _, f := range []struct {
			key string
			v   float64
		}{{"input_per_mtok", p.InputPerMTok}, {"output_per_mtok", p.OutputPerMTok},
			{"cache_read_per_mtok", p.CacheReadPerMTok}, {"cache_write_per_mtok", p.CacheWritePerMTok}} {
			if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) {
				return l.invalid("prices."+model+"."+f.key, fmt.Sprintf("want a price of 0 or more (US dollars per million tokens), got %v", f.v))
			}
		}
	}
	return nil
}

// github checks the github: and gitlab: lists.
func (l *loader) github(c *Config) error {
	for _, h := range []struct {
		key string
		s   ForgeHost
	}{{ForgeGitHub, c.GitHub}, {ForgeGitLab, c.GitLab}} {
		for i, label := range h.s.Labels {
			if strings.TrimSpace(label) == "" {
				return l.invalid(fmt.Sprintf("%s.labels[%d]", h.key, i), `want a label name, got ""`)
			}
		}
		for i, p := range h.s.AllowSensitive {
			if err := eval.CheckPattern(p); err != nil {
				return l.invalid(fmt.Sprintf("%s.allow_sensitive[%d]", h.key, i), err.Error()+` (want a path pattern such as ".github/workflows/**", or "**" for all)`)
			}
		}
	}
	return nil
}

// follow checks the follow: lists: verify names commands of commands:,
// required checks are names.
func (l *loader) follow(c *Config) error {
	cmds := c.Commands.ByName()
	for i, name := range c.Follow.Verify {
		if _, ok := cmds[name]; !ok {
			return l.invalid(fmt.Sprintf("follow.verify[%d]", i), fmt.Sprintf("want a command of commands: (install, build, test or lint), got %q", name))
		}
	}
	for i, name := range c.Follow.RequiredChecks {
		if strings.TrimSpace(name) == "" {
			return l.invalid(fmt.Sprintf("follow.required_checks[%d]", i), `want a check's name, got ""`)
		}
	}
	return nil
}

// roles checks each role's requirements and rubric.
func (l *loader) roles(c *Config) error {
	for _, name := range slices.Sorted(maps.Keys(c.Roles)) {
		rc := c.Roles[name]
		if rc.Requirements != nil {
			if err := rc.Requirements.Validate(); err != nil {
				return l.invalid("roles."+name+".requirements", err.Error())
			}
		}
		for crit, desc := range rc.Rubric {
			if strings.TrimSpace(crit) == "" || strings.TrimSpace(desc) == "" {
				return l.invalid("roles."+name+".rubric", "want criterion: description, both non-empty")
			}
		}
	}
	return nil
}

// runners checks each runner entry's settings against its type.
func (l *loader) runners(c *Config) error {
	types := builtin.Registry(nil)
	for _, name := range slices.Sorted(maps.Keys(c.Runners)) {
		r := c.Runners[name]
		path := "runners." + name
		if _, given := l.origin[path+".timeout"]; given {
			if bad := positive(r.Timeout); bad != "" {
				return l.invalid(path+".timeout", bad)
			}
		}
		if r.URL != "" {
			if bad := urlProblem(r.URL); bad != "" {
				return l.invalid(path+".url", bad)
			}
		}
		d, known := types.Describe(c.RunnerType(name))
		if key, msg := unusedSetting(d, known, r); key != "" {
			return l.invalid(path+"."+key, msg)
		}
	}
	return nil
}

// labelProblem says what is wrong with a label's name.
func labelProblem(s string) string {
	if strings.TrimSpace(s) == "" || strings.ContainsAny(s, ",\n") {
		return fmt.Sprintf("want a label name without commas, got %q", s)
	}
	return ""
}

// unusedSetting finds a setting that the runner type d describes would
// ignore and says what to do; what a type reads follows from its kind, and
// an entry of a type not known here is the runner's to check. A setting a runner ignores is refused:
// the user wrote it meaning something to happen.
func unusedSetting(d runner.Descriptor, known bool, r RunnerConfig) (key, msg string) {
	typ := d.Type
	switch d.Kind {
	case runner.TypeAPI:
		switch {
		case r.Command != "":
			return "command", fmt.Sprintf("the %s runner type runs no program (it calls an HTTP API); remove it", typ)
		case len(r.Args) > 0:
			return "args", fmt.Sprintf("the %s runner type runs no program (it calls an HTTP API); remove it", typ)
		case len(r.Env) > 1:
			return "env", fmt.Sprintf("the %s runner type reads its API key from one variable; list only that one", typ)
		}
	case runner.TypeExec:
		if r.URL != "" {
			return "url", fmt.Sprintf("the %s runner type has no base URL (give the command its own settings); remove it", typ)
		}
	case runner.TypeScript:
		switch {
		case r.Command != "", len(r.Args) > 0:
			key := "command"
			if r.Command == "" {
				key = "args"
			}
			return key, fmt.Sprintf("the %s runner type plays its scenario and runs no program; remove it or set type: exec", typ)
		case len(r.Env) > 0:
			return "env", fmt.Sprintf("the %s runner type passes no variables to anything; remove it", typ)
		case r.URL != "":
			return "url", fmt.Sprintf("the %s runner type has no base URL; remove it", typ)
		}
	}
	if r.Scenario != "" && known && d.Kind != runner.TypeScript {
		return "scenario", "only a script runner plays a scenario; remove it or set type: script"
	}
	return "", ""
}

// Auto is the runner name that asks the model selector to choose; it is
// reserved for it.
const Auto = "auto"

// notAvailable says a value is known to the schema but implemented by
// nothing in cadre yet.
const notAvailable = "is not available yet"

// unavailable refuses values that the contract names but cadre does not
// implement yet: a run asked for confinement or for the model selector
// must not go ahead without it, and a dry run must not approve what the
// run would then reject.
func (l *loader) unavailable(c *Config) error {
	if err := l.sandbox(c.Sandbox); err != nil {
		return err
	}
	if _, ok := c.Runners[Auto]; ok {
		return l.invalid("runners."+Auto, fmt.Sprintf("the name %s is reserved for the model selector; give this runner another name", Auto))
	}
	return l.selector(c)
}

// sandbox refuses network, allow_hosts and caches settings that nothing
// would enforce or use: without a sandbox an agent reaches whatever the
// host reaches, and sees every cache.
func (l *loader) sandbox(s Sandbox) error {
	// Under auto the run could fall back to none, where nothing would
	// enforce a network setting: asking for one means asking for bwrap.
	if s.Mode != "bwrap" && s.Network != "" && s.Network != "allow" {
		why := map[string]string{"none": "runs", "auto": "may run"}[s.Mode] + " agents unconfined"
		// A mode from the environment over a file's network setting is
		// what changed: blame the variable, not the file's line.
		_, modeEnv := l.fromEnv["sandbox.mode"]
		if _, netEnv := l.fromEnv["sandbox.network"]; modeEnv && !netEnv {
			return l.invalid("sandbox.mode", fmt.Sprintf("%s %s, where nothing can enforce sandbox.network %s (%s); want bwrap, or network allow",
				s.Mode, why, s.Network, l.whereOf("sandbox.network")))
		}
		return l.invalid("sandbox.network", fmt.Sprintf("%s needs sandbox.mode: bwrap (sandbox.mode %s %s, where nothing can enforce it); set mode: bwrap or use allow", s.Network, s.Mode, why))
	}
	for i, h := range s.AllowHosts {
		if bad := hostProblem(h); bad != "" {
			return l.invalid(fmt.Sprintf("sandbox.allow_hosts[%d]", i), bad)
		}
	}
	if len(s.AllowHosts) > 0 {
		trustAll := s.TrustRepo != nil && *s.TrustRepo
		switch {
		case s.Network != "" && s.Network != "model-only":
			reach := map[string]string{"allow": "reaches every host", "deny": "reaches none"}[s.Network]
			return l.invalid("sandbox.allow_hosts", fmt.Sprintf("applies only to network: model-only (network %s %s); remove it or set network: model-only", s.Network, reach))
		case s.Network == "" && s.Mode == "none":
			return l.invalid("sandbox.allow_hosts", "applies only to network: model-only, and sandbox.mode none confines nothing; remove it or set mode: bwrap")
		case s.Network == "" && trustAll:
			return l.invalid("sandbox.allow_hosts", "applies to untrusted items' network model-only, and sandbox.trust_repo true trusts every item; remove it or set network: model-only")
		}
	}
	for i, c := range s.Caches {
		if _, err := sandbox.ParseCache(c); err != nil {
			return l.invalid(fmt.Sprintf("sandbox.caches[%d]", i), err.Error())
		}
	}
	if len(s.Caches) > 0 && s.Mode == "none" {
		return l.invalid("sandbox.caches", "applies only under a sandbox, and sandbox.mode none runs agents unconfined (they see every cache); remove it or set mode: bwrap")
	}
	return nil
}

// networkProblem checks sandbox.network; unset, it depends on the item.
func networkProblem(s string) string {
	if s == "" {
		return ""
	}
	return oneOf(s, "allow", "deny", "model-only")
}

// hostProblem checks an allow_hosts entry: a host name or IP address,
// with an optional port, and nothing else (no scheme, path or wildcard).
func hostProblem(h string) string {
	host, port := h, ""
	if hh, p, err := net.SplitHostPort(h); err == nil {
		host, port = hh, p
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("want host or host:port (no scheme, path or wildcard), got %q", h)
		}
	}
	if host == "" || strings.ContainsAny(host, "/*:@ \t") && net.ParseIP(host) == nil {
		return fmt.Sprintf("want host or host:port (no scheme, path or wildcard), got %q", h)
	}
	return ""
}

// selector checks the model selector's settings, and that a role asking
// for it has candidates to choose from.
func (l *loader) selector(c *Config) error {
	s := c.Selector
	for i, cand := range s.Candidates {
		r, m, _ := strings.Cut(cand, "/")
		if strings.TrimSpace(r) == "" || strings.Contains(m, "/") || r == Auto || (strings.Contains(cand, "/") && m == "") {
			return l.invalid(fmt.Sprintf("selector.candidates[%d]", i), fmt.Sprintf(`want "runner" or "runner/model", got %q`, cand))
		}
	}
	if bad := atLeast(s.MinSamples, 1); bad != "" {
		return l.invalid("selector.min_samples", bad)
	}
	if s.Explore < 0 || math.IsNaN(s.Explore) || math.IsInf(s.Explore, 0) {
		return l.invalid("selector.explore", fmt.Sprintf("want 0 or more, got %v", s.Explore))
	}
	if len(s.Candidates) > 0 {
		return nil
	}
	need := fmt.Sprintf("%s (the model selector) needs selector.candidates to choose from, e.g. selector: {candidates: [claude, codex]}", Auto)
	if c.Defaults.Runner == Auto {
		return l.invalid("defaults.runner", need)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Roles)) {
		if c.Roles[name].Runner == Auto {
			return l.invalid("roles."+name+".runner", need)
		}
	}
	return nil
}

// invalid formats a validation error for the key at path.
func (l *loader) invalid(path, msg string) error {
	// An element of a list (path[i]) came from the list's variable when
	// one set the list.
	if name, ok := l.fromEnv[path]; ok {
		return fmt.Errorf("%s: %s", name, msg)
	} else if i := strings.IndexByte(path, '['); i > 0 && strings.HasSuffix(path, "]") {
		if name, ok := l.fromEnv[path[:i]]; ok {
			return fmt.Errorf("%s: %s", name, msg)
		}
	}
	if where, ok := l.origin[path]; ok {
		return fmt.Errorf("%s: %s: %s", where, path, msg)
	}
	return fmt.Errorf("%s: %s", path, msg)
}

// whereOf names where path was set: its file and line, else the path.
func (l *loader) whereOf(path string) string {
	if where, ok := l.origin[path]; ok {
		return where + ": " + path
	}
	return path
}

// tasksDirProblem: task files are the repository's, and tasks_dir is
// read relative to its root; an absolute path would be read as one too.
func tasksDirProblem(dir string) string {
	if bad := nonEmpty(dir, "a directory"); bad != "" {
		return bad
	}
	if filepath.IsAbs(dir) || !filepath.IsLocal(dir) {
		return fmt.Sprintf("want a directory inside the repository, relative to its root (e.g. tasks), got %q", dir)
	}
	return ""
}

func nonEmpty(s, what string) string {
	if strings.TrimSpace(s) == "" {
		return fmt.Sprintf("want %s, got %q", what, s)
	}
	return ""
}

func positive(d Duration) string {
	if d <= 0 {
		return fmt.Sprintf("want a duration above zero, got %q", d.String())
	}
	return ""
}

func notNegative(d Duration) string {
	if d < 0 {
		return fmt.Sprintf("want a duration of zero or more, got %q", d.String())
	}
	return ""
}

func atLeast(n, least int) string {
	if n < least {
		return fmt.Sprintf("want %d or more, got %d", least, n)
	}
	return ""
}

func rating(n int) string {
	if n < 0 || n > 10 {
		return fmt.Sprintf("want 0 to 10, got %d", n)
	}
	return ""
}

func budgetProblem(f float64) string {
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Sprintf("want 0 (no limit) or more, got %v", f)
	}
	return ""
}

// queryStateProblem: empty means open, as GitHub's own default.
func queryStateProblem(s string) string {
	if s == "" {
		return ""
	}
	return oneOf(s, "open", "closed", "all")
}

func oneOf(s string, allowed ...string) string {
	if slices.Contains(allowed, s) {
		return ""
	}
	return fmt.Sprintf("want %s, got %q", orList(allowed), s)
}

// oneOfOrEmpty is oneOf where "" (left to cadre) is allowed too.
func oneOfOrEmpty(s string, allowed ...string) string {
	if s == "" {
		return ""
	}
	return oneOf(s, allowed...)
}

// optionalURL is urlProblem for a URL that may be left out.
func optionalURL(s string) string {
	if s == "" {
		return ""
	}
	return urlProblem(s)
}

// orList writes "a, b or c".
func orList(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

func repoProblem(s string, nested bool) string {
	if s == "" {
		return ""
	}
	if nested {
		// A GitLab project: group/project, or group/sub/…/project.
		for _, part := range strings.Split(s, "/") {
			if part == "" || part == "." || part == ".." || strings.ContainsAny(part, " \t:#?") {
				return fmt.Sprintf("want owner/repo (on GitLab, group/project or group/sub/project), got %q", s)
			}
		}
		if !strings.Contains(s, "/") {
			return fmt.Sprintf("want owner/repo (on GitLab, group/project or group/sub/project), got %q", s)
		}
		return ""
	}
	owner, name, ok := strings.Cut(s, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") || strings.ContainsAny(s, " \t:") {
		return fmt.Sprintf("want owner/repo, got %q", s)
	}
	return ""
}

// hostPortProblem checks a HOST:PORT address such as a Temporal frontend's.
func hostPortProblem(s string) string {
	host, port, err := net.SplitHostPort(s)
	if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("want HOST:PORT such as 127.0.0.1:7233, got %q", s)
	}
	return ""
}

func urlProblem(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("want an http:// or https:// URL, got %q", s)
	}
	return ""
}

// notify refuses a kind cadre does not post and kinds with nowhere to post
// them, rather than accepting a setting that would do nothing.
func (l *loader) notify(n Notify) error {
	if n.Webhook != "" {
		if bad := urlProblem(n.Webhook); bad != "" {
			return l.invalid("notify.webhook", bad)
		}
	}
	for i, k := range n.On {
		if !slices.Contains(NotifyKinds, k) {
			return l.invalid(fmt.Sprintf("notify.on[%d]", i), fmt.Sprintf("want %s, got %q", orList(NotifyKinds), k))
		}
	}
	if len(n.On) > 0 && n.Webhook == "" {
		return l.invalid("notify.on", "needs notify.webhook, the URL to post to")
	}
	return nil
}
