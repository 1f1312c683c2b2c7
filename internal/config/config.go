// Package config reads cadre.yaml, the project's settings file.
//
// Every key is optional. Values come from three layers, later ones winning:
// the built-in defaults (Default), the file, and environment variables named
// CADRE_<SECTION>_<KEY> (CADRE_<KEY> for top-level keys). Command-line flags
// are applied by the caller on top of the result.
//
// Decoding is strict: an unknown key, a value of the wrong type or a value
// out of range is reported as a single line naming the file, the line and the
// key path (or the environment variable), with what was wanted.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/runner/price"
)

// Config is the merged content of cadre.yaml.
type Config struct {
	Project    string `yaml:"project"`
	Repository string `yaml:"repository"` // owner/repo; empty means infer from the origin remote
	BaseBranch string `yaml:"base_branch"`
	TasksDir   string `yaml:"tasks_dir"`

	Commands Commands `yaml:"commands"`
	Defaults Defaults `yaml:"defaults"`

	// Roles holds per-role overrides keyed by role name; a role not listed
	// uses Defaults.
	Roles map[string]RoleConfig `yaml:"roles"`
	// Runners holds per-runner settings keyed by runner name. A name that is
	// not a built-in runner names an instance of the built-in in Type.
	Runners map[string]RunnerConfig `yaml:"runners"`

	Limits Limits `yaml:"limits"`
	// Forge says which code host the repository lives on; its section
	// (GitHub or GitLab) configures it (Config.Host).
	Forge  Forge     `yaml:"forge"`
	GitHub ForgeHost `yaml:"github"`
	GitLab ForgeHost `yaml:"gitlab"`
	// Tracker is where work items come from when the work is tracked in
	// Jira or Linear while the code is on the forge.
	Tracker Tracker `yaml:"tracker"`
	// Telemetry exports traces and metrics over OTLP/HTTP.
	Telemetry Telemetry `yaml:"telemetry"`
	Sandbox   Sandbox   `yaml:"sandbox"`
	// Selector is the model selector runner "auto" asks (docs/evaluation.md).
	Selector Selector `yaml:"selector"`
	// Prices override or extend the built-in price table, by model name.
	Prices map[string]Price `yaml:"prices"`
	// Notify posts run events people wait for to a webhook.
	Notify Notify `yaml:"notify"`
	// Follow is what cadre watch does with its open pull requests.
	Follow Follow `yaml:"follow"`
	// Commit says how cadre's commits read.
	Commit Commit `yaml:"commit"`

	// Engine is where cadre run's items run: EngineEmbedded (this
	// process) or EngineTemporal (cadre workers, through Temporal).
	Engine string `yaml:"engine"`
	// Temporal says where the Temporal engine's server and queue are.
	Temporal Temporal `yaml:"temporal"`

	// where maps a key path to where its value was set, for errors found
	// after loading (an unknown runner name, say).
	where map[string]string
}

// Where names the place a key path got its value, for a one-line error:
// "cadre.yaml:3: defaults.runner", "CADRE_DEFAULTS_RUNNER", or the bare key
// path when the value is a default.
func (c Config) Where(path string) string {
	if w, ok := c.where[path]; ok {
		return w
	}
	return path
}

// Commands are the project's shell commands; an empty one is skipped.
type Commands struct {
	Install string `yaml:"install"`
	Build   string `yaml:"build"`
	Test    string `yaml:"test"`
	Lint    string `yaml:"lint"`
}

// ByName is the commands by their names in cadre.yaml (install, build,
// test, lint).
func (c Commands) ByName() map[string]string {
	return map[string]string{"install": c.Install, "build": c.Build, "test": c.Test, "lint": c.Lint}
}

// Defaults apply to every role without its own entry in Config.Roles.
type Defaults struct {
	Runner   string   `yaml:"runner"`
	Model    string   `yaml:"model"`    // empty: the runner's own default
	Workflow string   `yaml:"workflow"` // for GitHub issues and prompts
	Timeout  Duration `yaml:"timeout"`  // per agent step
}

// RoleConfig chooses how one role is reached.
type RoleConfig struct {
	Runner string `yaml:"runner"` // "auto" lets the model selector choose
	Model  string `yaml:"model"`
	// Requirements override the gatekeeper's built-in checks of this
	// role's work.
	Requirements *eval.Requirements `yaml:"requirements"`
	// Rubric replaces the judge's built-in criteria for this role's work:
	// criterion → what it means.
	Rubric map[string]string `yaml:"rubric"`
}

// RunnerConfig holds the settings of one runner. Which fields matter depends
// on the runner type; the runner packages check their own.
type RunnerConfig struct {
	Type     string   `yaml:"type"` // built-in runner type; empty: the entry's name
	Command  string   `yaml:"command"`
	Args     []string `yaml:"args"`
	Env      []string `yaml:"env"` // names of variables passed through to the agent
	URL      string   `yaml:"url"`
	Model    string   `yaml:"model"`
	Scenario string   `yaml:"scenario"`
	Timeout  Duration `yaml:"timeout"` // zero: Defaults.Timeout
}

// Limits bound a run.
type Limits struct {
	ParallelIssues          int     `yaml:"parallel_issues"`
	ParallelAgents          int     `yaml:"parallel_agents"`
	BudgetUSD               float64 `yaml:"budget_usd"` // 0 means no limit
	AuditPassRating         int     `yaml:"audit_pass_rating"`
	MaxAttempts             int     `yaml:"max_attempts"`
	MaxReviewRounds         int     `yaml:"max_review_rounds"`
	EscalateBelowConfidence int     `yaml:"escalate_below_confidence"`
	MaxInsufficientLoops    int     `yaml:"max_insufficient_loops"`
	MaxIterations           int     `yaml:"max_iterations"` // moa workflow: most architect → executor → critic rounds
	// ApproveGoal has a goal the loop workflow's judge finds met wait for
	// a human's approval before it is committed (the judge hands over to a human).
	ApproveGoal bool `yaml:"approve_goal"`
	// WorktreePool: worktrees kept checked out at the base ahead of need,
	// for repositories where checking out is slow (0: off).
	WorktreePool int `yaml:"worktree_pool"`
	// KillGrace is what a stopped or timed-out agent (or project command)
	// is given between SIGTERM and SIGKILL, confined or not.
	KillGrace Duration `yaml:"kill_grace"`
	// MaxRunDuration stops a run gracefully, as cadre stop does, once it
	// has run this long in one process (0: no limit).
	MaxRunDuration Duration `yaml:"max_run_duration"`
}

// Price is what a model costs per million tokens (prices.MODEL), for
// runners whose backend reports tokens but no cost (the cost is then marked
// estimated). The price table that reads it defines it.
type Price = price.Price

// The forges cadre knows (forge.type).
const (
	ForgeGitHub = "github"
	ForgeGitLab = "gitlab"
)

// Forge names the code host: its type, and the web address of a
// self-managed one. An empty type is learnt from the origin remote
// (ResolveForge) before anything reads Host.
type Forge struct {
	Type string `yaml:"type"`
	URL  string `yaml:"url"`
}

// ForgeHost configures a forge: github: and gitlab: have the same keys,
// so a repository moving between them keeps its settings.
type ForgeHost struct {
	TokenEnv string `yaml:"token_env"` // name of the variable holding the token
	APIURL   string `yaml:"api_url"`
	// WebhookSecretEnv names the variable holding the secret the forge
	// signs its webhooks with (cadre watch --listen): GitHub's HMAC key,
	// GitLab's X-Gitlab-Token.
	WebhookSecretEnv string `yaml:"webhook_secret_env"`
	// CAFile is a PEM bundle trusted beside the system's roots, for a
	// self-managed instance whose certificate a private CA signed.
	CAFile string   `yaml:"ca_file"`
	Labels []string `yaml:"labels"` // added to every pull request
	Draft  bool     `yaml:"draft"`  // open pull requests as drafts
	// AllowSensitive lists the sensitive paths (CI workflows, agent
	// configuration, lockfiles: eval.DefaultForbiddenPaths) a pull request
	// may change and still open ready, unlabelled; "**" allows them all.
	AllowSensitive []string `yaml:"allow_sensitive"`
	// Authors, when set, is the allow-list of issue authors cadre works for.
	Authors []string `yaml:"authors"`
	// RequireLabel, when set, is a label an issue must carry to be worked on.
	RequireLabel string `yaml:"require_label"`
	// Comments turns the progress comments on issues (start, done, failed) on or off.
	Comments bool `yaml:"comments"`
	// Query_* select the repository's issues that `cadre run` with no
	// target works on (instead of the task files); flags override them.
	QueryLabels    []string `yaml:"query_labels"`
	QueryMilestone string   `yaml:"query_milestone"`
	QueryAssignee  string   `yaml:"query_assignee"`
	QueryState     string   `yaml:"query_state"`
	QueryLimit     int      `yaml:"query_limit"`
	// WriteInterval spaces mutating API calls while they are paced: the
	// rate-limit budget is low or a secondary limit was met (forge
	// WithWriteGap). Zero never paces.
	WriteInterval Duration `yaml:"write_interval"`
	// PollInterval is how often cadre watch looks at the repository's
	// issues and pull requests (--interval overrides it).
	PollInterval Duration `yaml:"poll_interval"`
	// Watch is the issues cadre watch starts items for (its flags
	// override it); empty, it starts none and only follows.
	Watch WatchQuery `yaml:"watch"`
}

// WatchQuery selects the issues cadre watch takes up.
type WatchQuery struct {
	Labels    []string `yaml:"labels"`
	Assignee  string   `yaml:"assignee"`
	Milestone string   `yaml:"milestone"`
}

// Follow configures how cadre watch follows its pull requests to merge:
// the rounds of each reaction an item gets before a human is asked, and
// whether it merges.
type Follow struct {
	CIFailed         Rounds `yaml:"ci_failed"`
	ChangesRequested Rounds `yaml:"changes_requested"`
	Conflict         Rounds `yaml:"conflict"`
	// Merge is off, or the method a pull request approved and green is
	// merged with: merge, squash or rebase.
	Merge string `yaml:"merge"`
	// Reviewers are the logins whose reviews count; empty, the
	// repository's owners, members and collaborators.
	Reviewers []string `yaml:"reviewers"`
	// Verify names the commands (of commands:) a reaction's tree must
	// pass, confined as the item, before its commit is pushed.
	Verify []string `yaml:"verify"`
	// RequiredChecks are checks that must have succeeded on the head
	// before a merge, besides branch protection's.
	RequiredChecks []string `yaml:"required_checks"`
	// StaleApprovals counts approvals given to earlier commits of the
	// pull request; off, only an approval of the head itself counts.
	StaleApprovals bool `yaml:"stale_approvals"`
	// MergeWithoutChecks lets a head that has no check at all merge.
	MergeWithoutChecks bool `yaml:"merge_without_checks"`
	// ChecksTimeout is how long a pushed head may go without any check
	// before the item waits for a human.
	ChecksTimeout Duration `yaml:"checks_timeout"`
	// PauseLabel is the label a pull request waiting for a human carries.
	PauseLabel string `yaml:"pause_label"`
}

// Commit configures the messages of cadre's commits.
type Commit struct {
	// Format is plain (the subject is the title) or conventional
	// ("fix: the title", its type from tags, labels or the title).
	Format string `yaml:"format"`
}

// Rounds is how many times a reaction may run for an item.
type Rounds struct {
	Rounds int `yaml:"rounds"`
}

// Merge methods, the values of follow.merge.
const (
	MergeOff = "off"
)

// Notification kinds, the values of notify.on.
const (
	NotifyPaused    = "paused"    // an item waits for a human (cadre approve)
	NotifyFailed    = "failed"    // an item failed
	NotifyCompleted = "completed" // a run completed, every item done
	NotifyBudget    = "budget"    // a run reached its budget and paused
)

// NotifyKinds are the accepted values of notify.on, in documentation order.
var NotifyKinds = []string{NotifyPaused, NotifyFailed, NotifyCompleted, NotifyBudget}

// Notify configures webhook notifications: a JSON POST (with a
// Slack-compatible text field) per event of the kinds in On; no On means
// every kind.
type Notify struct {
	Webhook string   `yaml:"webhook"`
	On      []string `yaml:"on"`
}

// Wants says whether kind is to be posted.
func (n Notify) Wants(kind string) bool {
	if n.Webhook == "" {
		return false
	}
	if len(n.On) == 0 {
		return true
	}
	for _, k := range n.On {
		if k == kind {
			return true
		}
	}
	return false
}

// Selector configures the model selector: roles whose runner is "auto" get
// one of Candidates ("runner" or "runner/model"), chosen from the score
// store by quality per cost, trying each candidate MinSamples times first;
// Explore weighs trying the less-tried candidates again.
type Selector struct {
	Candidates []string `yaml:"candidates"`
	MinSamples int      `yaml:"min_samples"`
	Explore    float64  `yaml:"explore"`
}

// Sandbox configures agent process isolation.
type Sandbox struct {
	// Mode is none, bwrap, or auto (the default): bwrap where bubblewrap
	// works here, none otherwise, with a warning.
	Mode string `yaml:"mode"` // auto | none | bwrap
	// Network is allow, deny or model-only for every item; unset (""),
	// it depends on the item (see NetworkFor).
	Network string `yaml:"network"`
	// AllowHosts are host or host:port entries reachable under
	// network: model-only besides the runner's model endpoints.
	AllowHosts []string `yaml:"allow_hosts"`
	// TrustRepo says whether an item's tree may keep configuration that
	// runs programs (agent CLI hooks and MCP servers, git hooks and filter
	// drivers, .envrc) while agents and cadre's git work in it. Unset, the
	// answer depends on the item (see TrustsRepo).
	TrustRepo *bool `yaml:"trust_repo"`
	// Caches are more host paths agents see under bwrap: PATH read-only,
	// PATH:rw a writable directory kept with the build caches.
	Caches []string `yaml:"caches"`
	// AllowUnconfined lets an untrusted item run where its confinement
	// cannot work (mode auto where bubblewrap does not); unset, such an
	// item is refused (see RefusesUnconfined).
	AllowUnconfined bool `yaml:"allow_unconfined"`
}

// RefusesUnconfined says whether an item may not run where nothing
// confines it: an untrusted one (see TrustsRepo), unless
// allow_unconfined says it may. A trusted item runs with a warning.
func (s Sandbox) RefusesUnconfined(trusted bool) bool {
	return !trusted && !s.AllowUnconfined
}

// NetworkFor is the network of a confined item's agents: sandbox.network
// when set; unset, the host's for trusted items and model-only for
// untrusted ones, whose issue text could steer an agent to send what it
// reads anywhere.
func (s Sandbox) NetworkFor(trusted bool) string {
	switch {
	case s.Network != "":
		return s.Network
	case trusted:
		return "allow"
	}
	return "model-only"
}

// Networks are the networks trusted and untrusted items' agents get; the
// same one twice when trust_repo decides for every item.
func (s Sandbox) Networks() (trusted, untrusted string) {
	if s.TrustRepo != nil {
		n := s.NetworkFor(*s.TrustRepo)
		return n, n
	}
	return s.NetworkFor(true), s.NetworkFor(false)
}

// TrustsRepo says whether an item's tree is trusted. Unless trust_repo
// says otherwise for every item, it is for local task files and prompts
// (the user wrote them) and for issues whose author github.authors lists;
// it is not for an issue anyone else opened, whose text steers the agents
// that could plant such configuration for the next step or for cadre.
func (s Sandbox) TrustsRepo(fromStranger bool) bool {
	if s.TrustRepo != nil {
		return *s.TrustRepo
	}
	return !fromStranger
}

// Engines a run can use, the values of engine.
const (
	EngineEmbedded = "embedded"
	EngineTemporal = "temporal"
)

// Temporal locates the Temporal engine: the frontend's address, the
// namespace and the task queue the workers of this repository poll.
type Temporal struct {
	Address   string `yaml:"address"`
	Namespace string `yaml:"namespace"`
	TaskQueue string `yaml:"task_queue"`
}

// Duration is a time.Duration written in YAML and environment variables as
// Go duration text such as "20m" or "90s".
type Duration time.Duration

// String formats d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes d as duration text, so encoders emit "20m0s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads duration text such as "20m".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("%s, got %q", wantDuration, b)
	}
	*d = Duration(v)
	return nil
}

// DefaultWriteInterval is github.write_interval's default: the spacing
// cadre has always kept between GitHub writes, a quarter of the second
// GitHub asks of heavy writers, since paced writes are also serial.
const DefaultWriteInterval = time.Second / 4

// Telemetry is where cadre's traces and metrics go: an OTLP/HTTP
// collector. The standard OTEL_* variables apply as well; an endpoint set
// nowhere exports nothing, at no cost.
type Telemetry struct {
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	ServiceName  string `yaml:"service_name"`
}

// DefaultGitLabAPI is gitlab.api_url's default: GitLab.com's REST API.
// With forge.url set, the default is that instance's /api/v4 instead.
const DefaultGitLabAPI = "https://gitlab.com/api/v4"

// Default returns the settings used when cadre.yaml sets nothing.
func Default() Config {
	return Config{
		BaseBranch: "main",
		TasksDir:   "tasks",
		Defaults: Defaults{
			Runner:   "claude",
			Workflow: "auto",
			Timeout:  Duration(20 * time.Minute),
		},
		Roles:   map[string]RoleConfig{},
		Runners: map[string]RunnerConfig{},
		Prices:  map[string]Price{},
		Limits: Limits{
			ParallelIssues:          3,
			ParallelAgents:          3,
			BudgetUSD:               0,
			AuditPassRating:         8,
			MaxAttempts:             2,
			MaxReviewRounds:         2,
			EscalateBelowConfidence: 5,
			MaxInsufficientLoops:    5,
			MaxIterations:           3,
			ApproveGoal:             true,
			KillGrace:               Duration(10 * time.Second),
		},
		GitHub: ForgeHost{
			TokenEnv:      "GITHUB_TOKEN",
			APIURL:        "https://api.github.com/",
			Comments:      true,
			WriteInterval: Duration(DefaultWriteInterval),
			PollInterval:  Duration(time.Minute),
		},
		Telemetry: Telemetry{ServiceName: "cadre"},
		Tracker:   Tracker{States: TrackerStates{Started: "In Progress", Review: "In Review", Done: "Done"}},
		GitLab: ForgeHost{
			TokenEnv:      "GITLAB_TOKEN",
			APIURL:        DefaultGitLabAPI,
			Comments:      true,
			WriteInterval: Duration(DefaultWriteInterval),
			PollInterval:  Duration(time.Minute),
		},
		Follow: Follow{CIFailed: Rounds{2}, ChangesRequested: Rounds{3}, Conflict: Rounds{1}, Merge: MergeOff,
			Verify: []string{"build", "test"}, ChecksTimeout: Duration(time.Hour), PauseLabel: "cadre:needs-human"},
		Commit:   Commit{Format: "plain"},
		Sandbox:  Sandbox{Mode: "auto"},
		Selector: Selector{MinSamples: 3, Explore: 0.5},
		Engine:   EngineEmbedded,
		Temporal: Temporal{Address: "127.0.0.1:7233", Namespace: "default", TaskQueue: "cadre"},
	}
}

// Load reads the file at path, applies environment overrides and validates
// the result. A missing file is not an error: the defaults apply. getenv is
// os.Getenv in production and a map lookup in tests; nil means no variables.
func Load(path string, getenv func(string) string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Config{}, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data, getenv)
}

// Parse decodes data as the content of the file called name (used in error
// messages), then applies environment overrides and validates, like Load.
func Parse(name string, data []byte, getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	cfg := Default()
	l := newLoader(name)
	if err := l.decodeFile(data, &cfg); err != nil {
		return Config{}, err
	}
	if err := l.applyEnv(&cfg, getenv); err != nil {
		return Config{}, err
	}
	if err := l.validate(&cfg); err != nil {
		return Config{}, err
	}
	if _, set := l.origin["gitlab.api_url"]; !set && l.fromEnv["gitlab.api_url"] == "" && cfg.Forge.URL != "" {
		// A self-managed instance serves its API under its own address.
		cfg.GitLab.APIURL = strings.TrimRight(cfg.Forge.URL, "/") + "/api/v4"
	}
	cfg.where = map[string]string{}
	for path, at := range l.origin {
		cfg.where[path] = at + ": " + path
	}
	for path, env := range l.fromEnv {
		cfg.where[path] = env
	}
	return cfg, nil
}

// RunnerType returns the built-in runner type behind name: the Type of its
// entry in Runners, or name itself when there is no entry or it has no type.
func (c Config) RunnerType(name string) string {
	if t := c.Runners[name].Type; t != "" {
		return t
	}
	return name
}

// RoleRunner returns the runner and model for role. The runner is the role's
// own, else Defaults.Runner. The model is the role's own; else
// Defaults.Model when the runner is the default one (a model name rarely
// fits another runner); else the runner entry's model; else empty, which
// leaves the choice to the runner.
func (c Config) RoleRunner(role string) (runner, model string) {
	rc := c.Roles[role]
	runner = rc.Runner
	if runner == "" {
		runner = c.Defaults.Runner
	}
	switch {
	case rc.Model != "":
		model = rc.Model
	case runner == c.Defaults.Runner && c.Defaults.Model != "":
		model = c.Defaults.Model
	default:
		model = c.Runners[runner].Model
	}
	return runner, model
}

// StepTimeout is the limit of one agent step on the named runner: the
// runner entry's timeout when it sets one, else Defaults.Timeout. A
// --timeout flag overrides both (the caller's concern).
func (c Config) StepTimeout(runner string) time.Duration {
	if d := c.Runners[runner].Timeout; d > 0 {
		return time.Duration(d)
	}
	return time.Duration(c.Defaults.Timeout)
}
