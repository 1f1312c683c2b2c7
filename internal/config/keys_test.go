package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// keyEffect is one documented key of cadre.yaml set to a value other than
// its default, and what that must do: be refused with an error, or change
// what the code that consumes it reads.
type keyEffect struct {
	key  string // key path as docs/config.md writes it (NAME, MODEL for map entries)
	yaml string // a file setting it to a non-default value
	// refused, when set, is the error the value must get.
	refused string
	// read returns what consumers of the key see, through the accessor
	// they use; it must differ from the defaults' (nil when refused).
	read func(Config) any
	// by names the code that acts on the value, so a reviewer can check
	// the effect is real (the end-to-end tests exercise most of them).
	by string
}

// keyEffects lists every key of cadre.yaml. TestEveryKeyHasAnEffect fails
// when the Config struct gains a key without a row here, so a new setting
// cannot be accepted and ignored without someone deciding what it does.
var keyEffects = append(baseEffects, onGitLab(baseEffects)...)

// onGitLab is the github: rows again for gitlab:, which has the same keys:
// set on a GitLab repository, each must change what the code reads
// through Config.Host.
func onGitLab(rows []keyEffect) []keyEffect {
	var out []keyEffect
	for _, k := range rows {
		if !strings.HasPrefix(k.key, "github.") {
			continue
		}
		k.key = "gitlab." + strings.TrimPrefix(k.key, "github.")
		k.yaml = "forge: {type: gitlab}\n" + strings.Replace(k.yaml, "github:", "gitlab:", 1)
		k.refused = strings.Replace(k.refused, "cadre.yaml:1: github.", "cadre.yaml:2: gitlab.", 1)
		out = append(out, k)
	}
	return out
}

var baseEffects = []keyEffect{
	{key: "project", yaml: "project: p", read: func(c Config) any { return c.Project },
		by: "engine: projectName of every context file"},
	{key: "repository", yaml: "repository: o/r", read: func(c Config) any { return c.Repository },
		by: "engine and forge: issue refs without owner, the context file"},
	{key: "base_branch", yaml: "base_branch: dev", read: func(c Config) any { return c.BaseBranch },
		by: "engine: worktrees branch from it, pull requests target it"},
	{key: "tasks_dir", yaml: "tasks_dir: todo", read: func(c Config) any { return c.TasksDir },
		by: "engine: cadre run with no target loads it"},
	{key: "commands.install", yaml: "commands: {install: make deps}", read: func(c Config) any { return c.Commands.Install },
		by: "engine: checks run it; config.commands of the context file"},
	{key: "commands.build", yaml: "commands: {build: make}", read: func(c Config) any { return c.Commands.Build },
		by: "engine: checks run it; config.commands of the context file"},
	{key: "commands.test", yaml: "commands: {test: make test}", read: func(c Config) any { return c.Commands.Test },
		by: "engine: checks run it; config.commands of the context file"},
	{key: "commands.lint", yaml: "commands: {lint: make lint}", read: func(c Config) any { return c.Commands.Lint },
		by: "engine: checks run it; config.commands of the context file"},
	{key: "defaults.runner", yaml: "defaults: {runner: codex}", read: func(c Config) any { return first(c.RoleRunner("coder")) },
		by: "RoleRunner: every role without its own runner"},
	{key: "defaults.runner", yaml: "defaults: {runner: auto}",
		refused: "cadre.yaml:1: defaults.runner: auto (the model selector) needs selector.candidates to choose from, e.g. selector: {candidates: [claude, codex]}"},
	{key: "defaults.model", yaml: "defaults: {model: opus}", read: func(c Config) any { return second(c.RoleRunner("coder")) },
		by: "RoleRunner: the model of roles on the default runner"},
	{key: "defaults.workflow", yaml: "defaults: {workflow: standard}", read: func(c Config) any { return c.Defaults.Workflow },
		by: "engine: workflow of prompts and issues (cadre run --dry-run shows it)"},
	{key: "defaults.timeout", yaml: "defaults: {timeout: 5m}", read: func(c Config) any { return c.StepTimeout("claude") },
		by: "engine: the limit of every agent step and check command"},
	{key: "roles.NAME.runner", yaml: "roles: {coder: {runner: codex}}", read: func(c Config) any { return first(c.RoleRunner("coder")) },
		by: "RoleRunner: the role's runner"},
	{key: "roles.NAME.runner", yaml: "roles: {judge: {runner: auto}}",
		refused: "cadre.yaml:1: roles.judge.runner: auto (the model selector) needs selector.candidates to choose from, e.g. selector: {candidates: [claude, codex]}"},
	{key: "roles.NAME.requirements", yaml: "roles: {coder: {requirements: {sections: [Summary], commands: [lint]}}}",
		read: func(c Config) any {
			if r := c.Roles["coder"].Requirements; r != nil {
				return r.Sections
			}
			return nil
		},
		by: "engine: the gatekeeper's checks of the role's work (merged over the built-in ones)"},
	{key: "roles.NAME.requirements", yaml: "roles: {coder: {requirements: {allowed_files: [\"[\"]}}}",
		refused: "cadre.yaml:1: roles.coder.requirements: allowed_files: pattern \"[\": syntax error in pattern"},
	{key: "roles.NAME.rubric", yaml: "roles: {coder: {rubric: {speed: fast code}}}",
		read: func(c Config) any { return c.Roles["coder"].Rubric },
		by:   "engine: the judge's criteria for the role's work"},
	{key: "roles.NAME.model", yaml: "roles: {coder: {model: o3}}", read: func(c Config) any { return second(c.RoleRunner("coder")) },
		by: "RoleRunner: the role's model"},
	{key: "runners.NAME.type", yaml: "runners: {mine: {type: exec, command: x}}", read: func(c Config) any { return c.RunnerType("mine") },
		by: "engine: which built-in builds the runner"},
	{key: "runners.NAME.type", yaml: "runners: {auto: {type: exec, command: x}}",
		refused: "cadre.yaml:1: runners.auto: the name auto is reserved for the model selector; give this runner another name"},
	{key: "runners.NAME.command", yaml: "runners: {claude: {command: /opt/claude}}", read: func(c Config) any { return c.Runners["claude"].Command },
		by: "runner settings: the program a CLI or exec runner starts"},
	{key: "runners.NAME.command", yaml: "runners: {ollama: {command: ollama}}",
		refused: "cadre.yaml:1: runners.ollama.command: the ollama runner type runs no program (it calls an HTTP API); remove it"},
	{key: "runners.NAME.args", yaml: "runners: {claude: {args: [--verbose]}}", read: func(c Config) any { return c.Runners["claude"].Args },
		by: "runner settings: extra arguments of a CLI or exec runner"},
	{key: "runners.NAME.args", yaml: "runners: {openai: {args: [-v]}}",
		refused: "cadre.yaml:1: runners.openai.args: the openai runner type runs no program (it calls an HTTP API); remove it"},
	{key: "runners.NAME.env", yaml: "runners: {claude: {env: [MY_KEY]}}", read: func(c Config) any { return c.Runners["claude"].Env },
		by: "runner settings: variables passed to the agent (API runners: the key variable)"},
	{key: "runners.NAME.env", yaml: "runners: {anthropic: {env: [A, B]}}",
		refused: "cadre.yaml:1: runners.anthropic.env: the anthropic runner type reads its API key from one variable; list only that one"},
	{key: "runners.NAME.url", yaml: "runners: {ollama: {url: 'http://h:1'}}", read: func(c Config) any { return c.Runners["ollama"].URL },
		by: "runner settings: base URL of a model API or of a CLI's backend"},
	{key: "runners.NAME.url", yaml: "runners: {mine: {type: exec, command: x, url: 'http://h:1'}}",
		refused: "cadre.yaml:1: runners.mine.url: the exec runner type has no base URL (give the command its own settings); remove it"},
	{key: "runners.NAME.model", yaml: "runners: {codex: {model: o3}}\nroles: {coder: {runner: codex}}",
		read: func(c Config) any { return second(c.RoleRunner("coder")) }, by: "RoleRunner: the model when no role or default names one"},
	{key: "runners.NAME.scenario", yaml: "runners: {fake: {type: script, scenario: s.yaml}}", read: func(c Config) any { return c.Runners["fake"].Scenario },
		by: "script runner: the scenario it plays"},
	{key: "runners.NAME.scenario", yaml: "runners: {claude: {scenario: s.yaml}}",
		refused: "cadre.yaml:1: runners.claude.scenario: only a script runner plays a scenario; remove it or set type: script"},
	{key: "runners.NAME.timeout", yaml: "runners: {claude: {timeout: 2m}}", read: func(c Config) any { return c.StepTimeout("claude") },
		by: "engine: the limit of this runner's steps"},
	{key: "limits.parallel_issues", yaml: "limits: {parallel_issues: 7}", read: func(c Config) any { return c.Limits.ParallelIssues },
		by: "engine: items at once"},
	{key: "limits.parallel_agents", yaml: "limits: {parallel_agents: 7}", read: func(c Config) any { return c.Limits.ParallelAgents },
		by: "engine: agent steps at once in one item"},
	{key: "limits.budget_usd", yaml: "limits: {budget_usd: 2.5}", read: func(c Config) any { return c.Limits.BudgetUSD },
		by: "engine: no new step once spent"},
	{key: "limits.audit_pass_rating", yaml: "limits: {audit_pass_rating: 9}", read: func(c Config) any { return c.Limits.AuditPassRating },
		by: "workflow: the passing audit rating"},
	{key: "limits.max_attempts", yaml: "limits: {max_attempts: 4}", read: func(c Config) any { return c.Limits.MaxAttempts },
		by: "workflow: audit failures before a hard stop"},
	{key: "limits.max_review_rounds", yaml: "limits: {max_review_rounds: 4}", read: func(c Config) any { return c.Limits.MaxReviewRounds },
		by: "workflow: review → fix rounds"},
	{key: "limits.escalate_below_confidence", yaml: "limits: {escalate_below_confidence: 7}", read: func(c Config) any { return c.Limits.EscalateBelowConfidence },
		by: "workflow: confidence that pauses for a human"},
	{key: "limits.max_insufficient_loops", yaml: "limits: {max_insufficient_loops: 2}", read: func(c Config) any { return c.Limits.MaxInsufficientLoops },
		by: "workflow: INSUFFICIENT rounds of the loop workflow"},
	{key: "limits.approve_goal", yaml: "limits: {approve_goal: false}", read: func(c Config) any { return c.Limits.ApproveGoal },
		by: "workflow: a routed loop's goal met waits for a human's approval (cadre approve) before its commit"},
	{key: "limits.max_iterations", yaml: "limits: {max_iterations: 5}", read: func(c Config) any { return c.Limits.MaxIterations },
		by: "workflow: rounds of the moa workflow"},
	{key: "limits.worktree_pool", yaml: "limits: {worktree_pool: 4}", read: func(c Config) any { return c.Limits.WorktreePool },
		by: "engine: worktrees prepared ahead of need (workspace.StartPool)"},
	{key: "limits.worktree_pool", yaml: "limits: {worktree_pool: -1}",
		refused: "cadre.yaml:1: limits.worktree_pool: want 0 or more, got -1"},
	{key: "limits.kill_grace", yaml: "limits: {kill_grace: 3s}", read: func(c Config) any { return c.Limits.KillGrace },
		by: "proc: the time between SIGTERM and SIGKILL of a stopped or timed-out agent or command"},
	{key: "limits.kill_grace", yaml: "limits: {kill_grace: 0s}",
		refused: "cadre.yaml:1: limits.kill_grace: want a duration above zero, got \"0s\""},
	{key: "limits.max_run_duration", yaml: "limits: {max_run_duration: 2h}", read: func(c Config) any { return c.Limits.MaxRunDuration },
		by: "engine: a run stops gracefully past it (exit 130, resumable)"},
	{key: "limits.max_run_duration", yaml: "limits: {max_run_duration: -1m}",
		refused: "cadre.yaml:1: limits.max_run_duration: want a duration of zero or more, got \"-1m0s\""},
	{key: "github.token_env", yaml: "github: {token_env: GH_PAT}", read: func(c Config) any { return c.Host().TokenEnv },
		by: "cli: the variable the GitHub token is read from (and never passed to agents)"},
	{key: "github.api_url", yaml: "github: {api_url: 'https://ghe.example/api/v3'}", read: func(c Config) any { return c.Host().APIURL },
		by: "forge: the API base URL"},
	{key: "github.webhook_secret_env", yaml: "github: {webhook_secret_env: HOOK_SECRET}", read: func(c Config) any { return c.Host().WebhookSecretEnv },
		by: "cli: cadre watch --listen verifies GitHub's X-Hub-Signature-256 with the secret in this variable"},
	{key: "telemetry.otlp_endpoint", yaml: "telemetry: {otlp_endpoint: 'http://127.0.0.1:4318'}", read: func(c Config) any { return c.Telemetry.OTLPEndpoint },
		by: "telemetry: traces and metrics exported over OTLP/HTTP there"},
	{key: "telemetry.otlp_endpoint", yaml: "telemetry: {otlp_endpoint: collector:4318}",
		refused: "cadre.yaml:1: telemetry.otlp_endpoint: want an http:// or https:// URL, got \"collector:4318\""},
	{key: "telemetry.service_name", yaml: "telemetry: {service_name: cadre-prod}", read: func(c Config) any { return c.Telemetry.ServiceName },
		by: "telemetry: the service.name resource attribute"},
	{key: "github.ca_file", yaml: "github: {ca_file: ca.pem}", read: func(c Config) any { return c.Host().CAFile },
		by: "app: the forge client trusts the bundle beside the system's roots"},
	{key: "forge.type", yaml: "forge: {type: gitlab}", read: func(c Config) any { return c.HostKey() },
		by: "app: the forge built (GitLab), and the section read (gitlab:)"},
	{key: "forge.type", yaml: "forge: {type: gitea}",
		refused: "cadre.yaml:1: forge.type: want github or gitlab, got \"gitea\""},
	{key: "forge.url", yaml: "forge: {url: 'https://git.corp'}", read: func(c Config) any { return c.GitLab.APIURL },
		by: "config and app: gitlab.api_url defaults to its /api/v4; ResolveForge takes its host for GitLab"},
	{key: "forge.url", yaml: "forge: {url: git.corp}",
		refused: "cadre.yaml:1: forge.url: want an http:// or https:// URL, got \"git.corp\""},
	{key: "tracker.type", yaml: "tracker: {type: jira, url: 'https://acme.atlassian.net', project: PROJ}", read: func(c Config) any { return c.Tracker.Type },
		by: "app: the tracker work items come from (jira.New); intake: PROJ-123 targets"},
	{key: "tracker.type", yaml: "tracker: {type: asana}",
		refused: "cadre.yaml:1: tracker.type: want jira or linear, got \"asana\""},
	{key: "tracker.type", yaml: "tracker: {project: PROJ}",
		refused: "cadre.yaml:1: tracker.project: set tracker.type (jira or linear) for it to mean anything"},
	{key: "tracker.url", yaml: "tracker: {type: jira, url: 'https://acme.atlassian.net', project: PROJ}", read: func(c Config) any { return c.Tracker.URL },
		by: "app: the Jira site (or Linear endpoint) the tracker client calls"},
	{key: "tracker.url", yaml: "tracker: {type: jira, project: PROJ}",
		refused: "cadre.yaml:1: tracker.type: jira needs tracker.url, its site's address, e.g. https://acme.atlassian.net"},
	{key: "tracker.project", yaml: "tracker: {type: jira, url: 'https://acme.atlassian.net', project: PROJ}", read: func(c Config) any { return c.Tracker.Project },
		by: "jira: the project whose issues are taken; keys of another are refused"},
	{key: "tracker.project", yaml: "tracker: {type: linear, team: ENG, project: PROJ}",
		refused: "cadre.yaml:1: tracker.project: is Jira's: on Linear set tracker.team"},
	{key: "tracker.team", yaml: "tracker: {type: linear, team: ENG}", read: func(c Config) any { return c.Tracker.Team },
		by: "linear: the team whose issues are taken and whose states are used"},
	{key: "tracker.team", yaml: "tracker: {type: linear}",
		refused: "cadre.yaml:1: tracker.type: linear needs tracker.team, the key of the team whose issues cadre works on, e.g. ENG"},
	{key: "tracker.token_env", yaml: "tracker: {type: jira, url: 'https://acme.atlassian.net', project: PROJ, token_env: MY_JIRA}", read: func(c Config) any { return c.Tracker.TokenVar() },
		by: "app: the variable the tracker token is read from (never passed to agents, masked)"},
	{key: "tracker.states.started", yaml: "tracker: {type: jira, url: 'https://acme.atlassian.net', project: PROJ, states: {started: Doing}}", read: func(c Config) any { return c.Tracker.States.Started },
		by: "engine: the status an issue moves to when its item starts"},
	{key: "tracker.states.review", yaml: "tracker: {type: jira, url: 'https://acme.atlassian.net', project: PROJ, states: {review: Review}}", read: func(c Config) any { return c.Tracker.States.Review },
		by: "engine: the status an issue moves to when its pull request opens"},
	{key: "tracker.states.done", yaml: "tracker: {type: jira, url: 'https://acme.atlassian.net', project: PROJ, states: {done: Closed}}", read: func(c Config) any { return c.Tracker.States.Done },
		by: "app: the status an issue moves to when cadre watch sees its pull request merged"},
	{key: "tracker.watch.jql", yaml: "tracker: {type: jira, url: 'https://acme.atlassian.net', project: PROJ, watch: {jql: 'priority = High'}}", read: func(c Config) any { return c.Tracker.Watch.JQL },
		by: "cli: cadre watch takes up the project's issues the query selects"},
	{key: "tracker.watch.jql", yaml: "tracker: {type: linear, team: ENG, watch: {jql: x}}",
		refused: "cadre.yaml:1: tracker.watch.jql: is Jira's: on Linear use tracker.watch.labels and tracker.watch.state"},
	{key: "tracker.watch.jql", yaml: "tracker: {type: jira, url: 'https://a.example', project: P, watch: {jql: 'x = 1', labels: [a]}}",
		refused: "cadre.yaml:1: tracker.watch.jql: set it alone: with a query, write the labels and status in it (labels = x AND status = \"To Do\")"},
	{key: "tracker.watch.labels", yaml: "tracker: {type: jira, url: 'https://acme.atlassian.net', project: PROJ, watch: {labels: [cadre]}}", read: func(c Config) any { return c.Tracker.Watch.Labels },
		by: "cli: cadre watch takes up the issues with these labels"},
	{key: "tracker.watch.state", yaml: "tracker: {type: jira, url: 'https://acme.atlassian.net', project: PROJ, watch: {state: 'To Do'}}", read: func(c Config) any { return c.Tracker.Watch.State },
		by: "cli: cadre watch takes up the issues in this status"},
	{key: "github.labels", yaml: "github: {labels: [bot]}", read: func(c Config) any { return c.Host().Labels },
		by: "engine: labels of every pull request"},
	{key: "github.draft", yaml: "github: {draft: true}", read: func(c Config) any { return c.Host().Draft },
		by: "engine: pull requests opened as drafts"},
	{key: "github.allow_sensitive", yaml: "github: {allow_sensitive: ['**/go.sum']}", read: func(c Config) any { return c.Host().AllowSensitive },
		by: "engine: pull requests changing only these sensitive paths open ready, unlabelled"},
	{key: "github.authors", yaml: "github: {authors: [me]}", read: func(c Config) any { return c.Host().Authors },
		by: "engine: issues by other authors are refused"},
	{key: "github.require_label", yaml: "github: {require_label: ok}", read: func(c Config) any { return c.Host().RequireLabel },
		by: "engine: issues without the label are refused"},
	{key: "github.comments", yaml: "github: {comments: false}", read: func(c Config) any { return c.Host().Comments },
		by: "engine: no progress comments"},
	{key: "github.query_labels", yaml: "github: {query_labels: [x]}", read: func(c Config) any { return c.Host().QueryLabels },
		by: "cli: cadre run with no target queries issues"},
	{key: "github.query_milestone", yaml: "github: {query_milestone: v1}", read: func(c Config) any { return c.Host().QueryMilestone },
		by: "cli: cadre run with no target queries issues"},
	{key: "github.query_assignee", yaml: "github: {query_assignee: me}", read: func(c Config) any { return c.Host().QueryAssignee },
		by: "cli: cadre run with no target queries issues"},
	{key: "github.query_state", yaml: "github: {query_state: closed}", read: func(c Config) any { return c.Host().QueryState },
		by: "cli: cadre run with no target queries issues"},
	{key: "github.query_limit", yaml: "github: {query_limit: 5}", read: func(c Config) any { return c.Host().QueryLimit },
		by: "cli: cadre run with no target queries issues"},
	{key: "github.write_interval", yaml: "github: {write_interval: 1s}", read: func(c Config) any { return c.Host().WriteInterval },
		by: "app: forge.WithWriteGap, the spacing of paced GitHub writes"},
	{key: "github.write_interval", yaml: "github: {write_interval: 0s}", read: func(c Config) any { return c.Host().WriteInterval },
		by: "app: forge.WithWriteGap(0) never paces"},
	{key: "github.write_interval", yaml: "github: {write_interval: -1s}",
		refused: "cadre.yaml:1: github.write_interval: want a duration of zero or more, got \"-1s\""},
	{key: "github.poll_interval", yaml: "github: {poll_interval: 5m}", read: func(c Config) any { return c.Host().PollInterval },
		by: "cli: cadre watch's time between passes (--interval overrides it)"},
	{key: "github.poll_interval", yaml: "github: {poll_interval: 0s}",
		refused: "cadre.yaml:1: github.poll_interval: want a duration above zero, got \"0s\""},
	{key: "github.watch.labels", yaml: "github: {watch: {labels: [cadre]}}", read: func(c Config) any { return c.Host().Watch.Labels },
		by: "cli: cadre watch takes up the issues with these labels"},
	{key: "github.watch.assignee", yaml: "github: {watch: {assignee: me}}", read: func(c Config) any { return c.Host().Watch.Assignee },
		by: "cli: cadre watch takes up the issues assigned to this login"},
	{key: "github.watch.milestone", yaml: "github: {watch: {milestone: v1}}", read: func(c Config) any { return c.Host().Watch.Milestone },
		by: "cli: cadre watch takes up the issues of this milestone"},
	{key: "follow.ci_failed.rounds", yaml: "follow: {ci_failed: {rounds: 5}}", read: func(c Config) any { return c.Follow.CIFailed.Rounds },
		by: "follow: Decide pauses for a human once ci_failed has had these rounds"},
	{key: "follow.ci_failed.rounds", yaml: "follow: {ci_failed: {rounds: -1}}",
		refused: "cadre.yaml:1: follow.ci_failed.rounds: want 0 or more, got -1"},
	{key: "follow.changes_requested.rounds", yaml: "follow: {changes_requested: {rounds: 5}}", read: func(c Config) any { return c.Follow.ChangesRequested.Rounds },
		by: "follow: Decide pauses for a human once changes_requested has had these rounds"},
	{key: "follow.conflict.rounds", yaml: "follow: {conflict: {rounds: 0}}", read: func(c Config) any { return c.Follow.Conflict.Rounds },
		by: "follow: Decide pauses for a human once conflict has had these rounds"},
	{key: "follow.merge", yaml: "follow: {merge: squash}", read: func(c Config) any { return c.Follow.Merge },
		by: "follow: Decide merges an approved, green, mergeable pull request by this method (app.GitHub.Merge)"},
	{key: "follow.merge", yaml: "follow: {merge: yes-please}",
		refused: "cadre.yaml:1: follow.merge: want off, merge, squash or rebase, got \"yes-please\""},
	{key: "follow.verify", yaml: "follow: {verify: [lint]}", read: func(c Config) any { return c.Follow.Verify },
		by: "follow: a reaction's tree passes these commands (Follower.Verify), confined as the item, before its push"},
	{key: "follow.verify", yaml: "follow: {verify: [deploy]}",
		refused: "cadre.yaml:1: follow.verify[0]: want a command of commands: (install, build, test or lint), got \"deploy\""},
	{key: "follow.required_checks", yaml: "follow: {required_checks: [ci/test]}", read: func(c Config) any { return c.Follow.RequiredChecks },
		by: "follow: Decide merges only when each of these checks succeeded on the head"},
	{key: "follow.stale_approvals", yaml: "follow: {stale_approvals: true}", read: func(c Config) any { return c.Follow.StaleApprovals },
		by: "follow: Decide counts an approval of an earlier commit"},
	{key: "follow.merge_without_checks", yaml: "follow: {merge_without_checks: true}", read: func(c Config) any { return c.Follow.MergeWithoutChecks },
		by: "follow: Decide merges a head that has no check at all"},
	{key: "follow.checks_timeout", yaml: "follow: {checks_timeout: 10m}", read: func(c Config) any { return c.Follow.ChecksTimeout },
		by: "follow: Decide asks a human about a pushed head with no check after this long"},
	{key: "follow.checks_timeout", yaml: "follow: {checks_timeout: 0s}",
		refused: "cadre.yaml:1: follow.checks_timeout: want a duration above zero, got \"0s\""},
	{key: "follow.pause_label", yaml: "follow: {pause_label: waiting}", read: func(c Config) any { return c.Follow.PauseLabel },
		by: "follow: a pull request waiting for a human carries this label (Host.Label)"},
	{key: "follow.pause_label", yaml: "follow: {pause_label: \"a,b\"}",
		refused: "cadre.yaml:1: follow.pause_label: want a label name without commas, got \"a,b\""},
	{key: "commit.format", yaml: "commit: {format: conventional}", read: func(c Config) any { return c.Commit.Format },
		by: "engine: the subjects of its commits (commitmsg.Subject)"},
	{key: "commit.format", yaml: "commit: {format: gitmoji}",
		refused: "cadre.yaml:1: commit.format: want plain or conventional, got \"gitmoji\""},
	{key: "follow.reviewers", yaml: "follow: {reviewers: [rita]}", read: func(c Config) any { return c.Follow.Reviewers },
		by: "app: GitHub.View counts only these logins' reviews and comments"},
	{key: "sandbox.mode", yaml: "sandbox: {mode: bwrap}", read: func(c Config) any { return c.Sandbox.Mode },
		by: "app: a sandbox.Policy (probed once per run) confines every agent process through proc.Spec.Sandbox"},
	{key: "sandbox.mode", yaml: "sandbox: {mode: none}", read: func(c Config) any { return c.Sandbox.Mode },
		by: "app: no sandbox.Policy, not even where bubblewrap works (the default auto would confine)"},
	{key: "sandbox.network", yaml: "sandbox: {mode: bwrap, network: deny}", read: func(c Config) any { return c.Sandbox.Network },
		by: "sandbox: bwrap --unshare-net, loopback only"},
	{key: "sandbox.network", yaml: "sandbox: {mode: bwrap, network: model-only}", read: func(c Config) any { return c.Sandbox.Network },
		by: "sandbox: the step's proxy lets through only the model endpoints and allow_hosts"},
	{key: "sandbox.network", yaml: "sandbox: {network: deny}",
		refused: "cadre.yaml:1: sandbox.network: deny needs sandbox.mode: bwrap (sandbox.mode auto may run agents unconfined, where nothing can enforce it); set mode: bwrap or use allow"},
	{key: "sandbox.allow_hosts", yaml: "sandbox: {mode: bwrap, network: model-only, allow_hosts: [pypi.org]}", read: func(c Config) any { return c.Sandbox.AllowHosts },
		by: "sandbox: the step's proxy allows these hosts besides the model endpoints"},
	{key: "sandbox.allow_hosts", yaml: "sandbox: {allow_hosts: [pypi.org]}", read: func(c Config) any { return c.Sandbox.AllowHosts },
		by: "sandbox: untrusted items' model-only proxy (the default where bwrap works) allows these hosts besides the model endpoints"},
	{key: "sandbox.allow_hosts", yaml: "sandbox: {network: allow, allow_hosts: [pypi.org]}",
		refused: "cadre.yaml:1: sandbox.allow_hosts: applies only to network: model-only (network allow reaches every host); remove it or set network: model-only"},
	{key: "sandbox.network", yaml: "sandbox: {network: allow}", read: func(c Config) any { return c.Sandbox.NetworkFor(false) },
		by: "engine: untrusted items' agents reach every host instead of only their model endpoints"},
	{key: "sandbox.caches", yaml: "sandbox: {caches: [\"~/.cache/ccache:rw\", /opt/sdk]}", read: func(c Config) any { return c.Sandbox.Caches },
		by: "sandbox: each step sees /opt/sdk read-only and a writable ~/.cache/ccache kept with the item's build caches"},
	{key: "sandbox.caches", yaml: "sandbox: {caches: [relative/path]}",
		refused: `cadre.yaml:1: sandbox.caches[0]: want an absolute path or ~/path, got "relative/path"`},
	{key: "sandbox.trust_repo", yaml: "sandbox: {trust_repo: false}", read: func(c Config) any { return c.Sandbox.TrustsRepo(false) },
		by: "engine: local task files and prompts get their tree's executable configuration hidden from agents, and no git filter runs"},
	{key: "sandbox.trust_repo", yaml: "sandbox: {trust_repo: true}", read: func(c Config) any { return c.Sandbox.TrustsRepo(true) },
		by: "engine: issues from authors outside github.authors keep their tree's configuration"},
	{key: "sandbox.allow_unconfined", yaml: "sandbox: {allow_unconfined: true}", read: func(c Config) any { return c.Sandbox.RefusesUnconfined(false) },
		by: "engine: an untrusted item runs where nothing confines it, with the warning, instead of being refused before the run starts"},
	{key: "selector.candidates", yaml: "selector: {candidates: [claude, codex/o3]}", read: func(c Config) any { return c.Selector.Candidates },
		by: "engine: runner auto chooses among them (cadre run --dry-run shows the choice)"},
	{key: "selector.candidates", yaml: "selector: {candidates: [claude/]}",
		refused: `cadre.yaml:1: selector.candidates[0]: want "runner" or "runner/model", got "claude/"`},
	{key: "roles.NAME.runner", yaml: "selector: {candidates: [claude]}\nroles: {judge: {runner: auto}}", read: func(c Config) any { return first(c.RoleRunner("judge")) },
		by: "engine: the model selector picks the judge's runner per step"},
	{key: "selector.min_samples", yaml: "selector: {min_samples: 5}", read: func(c Config) any { return c.Selector.MinSamples },
		by: "engine: each candidate is tried this many times before the scores decide"},
	{key: "selector.min_samples", yaml: "selector: {min_samples: 0}",
		refused: "cadre.yaml:1: selector.min_samples: want 1 or more, got 0"},
	{key: "selector.explore", yaml: "selector: {explore: 2}", read: func(c Config) any { return c.Selector.Explore },
		by: "engine: the UCB1 exploration weight of the selector"},
	{key: "selector.explore", yaml: "selector: {explore: -1}",
		refused: "cadre.yaml:1: selector.explore: want 0 or more, got -1"},
	{key: "notify.webhook", yaml: "notify: {webhook: \"http://127.0.0.1:9/hook\"}", read: func(c Config) any { return c.Notify.Wants(NotifyPaused) },
		by: "notify: events of every kind are posted to it (app wires the notifier into every run)"},
	{key: "notify.webhook", yaml: "notify: {webhook: \"ftp://x\"}",
		refused: `cadre.yaml:1: notify.webhook: want an http:// or https:// URL, got "ftp://x"`},
	{key: "notify.on", yaml: "notify: {webhook: \"http://127.0.0.1:9/hook\", on: [failed]}", read: func(c Config) any { return wantedKinds(c) },
		by: "notify: only the listed kinds are posted"},
	{key: "notify.on", yaml: "notify: {webhook: \"http://127.0.0.1:9/hook\", on: [paused, finished]}",
		refused: `cadre.yaml:1: notify.on[1]: want paused, failed, completed or budget, got "finished"`},
	{key: "notify.on", yaml: "notify: {on: [failed]}",
		refused: `cadre.yaml:1: notify.on: needs notify.webhook, the URL to post to`},
	{key: "engine", yaml: "engine: temporal", read: func(c Config) any { return c.Engine },
		by: "cli: cadre run starts the items as Temporal workflows (--engine overrides it); resume continues a run on the engine it started on"},
	{key: "engine", yaml: "engine: kubernetes",
		refused: `cadre.yaml:1: engine: want embedded or temporal, got "kubernetes"`},
	{key: "temporal.address", yaml: "temporal: {address: \"temporal.internal:7233\"}", read: func(c Config) any { return c.Temporal.Address },
		by: "cli: the frontend cadre run, resume and worker dial (--temporal-address overrides it)"},
	{key: "temporal.address", yaml: "temporal: {address: localhost}",
		refused: `cadre.yaml:1: temporal.address: want HOST:PORT such as 127.0.0.1:7233, got "localhost"`},
	{key: "temporal.namespace", yaml: "temporal: {namespace: team}", read: func(c Config) any { return c.Temporal.Namespace },
		by: "cli: the namespace cadre run, resume and worker use (--namespace overrides it)"},
	{key: "temporal.namespace", yaml: "temporal: {namespace: \"\"}",
		refused: `cadre.yaml:1: temporal.namespace: want a namespace name, got ""`},
	{key: "temporal.task_queue", yaml: "temporal: {task_queue: q1}", read: func(c Config) any { return c.Temporal.TaskQueue },
		by: "cli: the queue cadre run starts workflows on and cadre worker polls (--task-queue overrides it)"},
	{key: "temporal.task_queue", yaml: "temporal: {task_queue: \" \"}",
		refused: `cadre.yaml:1: temporal.task_queue: want a task queue name, got " "`},
	{key: "prices.MODEL.input_per_mtok", yaml: "prices: {m: {input_per_mtok: 1}}", read: func(c Config) any { return c.Prices["m"] },
		by: "price table: cost estimates of runners that report only tokens"},
	{key: "prices.MODEL.output_per_mtok", yaml: "prices: {m: {output_per_mtok: 1}}", read: func(c Config) any { return c.Prices["m"] },
		by: "price table: cost estimates of runners that report only tokens"},
	{key: "prices.MODEL.cache_read_per_mtok", yaml: "prices: {m: {cache_read_per_mtok: 1}}", read: func(c Config) any { return c.Prices["m"] },
		by: "price table: cost estimates of runners that report only tokens"},
	{key: "prices.MODEL.cache_write_per_mtok", yaml: "prices: {m: {cache_write_per_mtok: 1}}", read: func(c Config) any { return c.Prices["m"] },
		by: "price table: cost estimates of runners that report only tokens"},
}

// wantedKinds are the notification kinds c posts.
func wantedKinds(c Config) []string {
	var out []string
	for _, k := range NotifyKinds {
		if c.Notify.Wants(k) {
			out = append(out, k)
		}
	}
	return out
}

func first(a, _ string) string  { return a }
func second(_, b string) string { return b }

// keyPaths lists the key paths of t's yaml tags, map entries written as
// placeholder (NAME, or MODEL for prices as the docs write them).
func keyPaths(t reflect.Type, prefix string) []string {
	var out []string
	for _, f := range fieldsOf(t) {
		path := join(prefix, f.name)
		ft := t.Field(f.index).Type
		switch {
		case ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Map && ft.Elem().Kind() != reflect.Struct:
			out = append(out, path) // a value of its own kind (gatekeeper requirements, a rubric)
		case ft.Kind() == reflect.Map:
			name := "NAME"
			if f.name == "prices" {
				name = "MODEL"
			}
			out = append(out, keyPaths(ft.Elem(), path+"."+name)...)
		case ft.Kind() == reflect.Struct && ft != durationType:
			out = append(out, keyPaths(ft, path)...)
		default:
			out = append(out, path)
		}
	}
	return out
}

func TestEveryKeyHasAnEffect(t *testing.T) {
	docs, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths := keyPaths(reflect.TypeFor[Config](), "")
	covered := map[string]bool{}
	for _, k := range keyEffects {
		if !slices.Contains(paths, k.key) {
			t.Errorf("row %q: no such key in Config", k.key)
		}
		if k.read != nil {
			covered[k.key] = true
		}
	}
	for _, p := range paths {
		if !covered[p] && !slices.ContainsFunc(keyEffects, func(k keyEffect) bool { return k.key == p }) {
			t.Errorf("key %s has no row in keyEffects: say what it does (or refuse it) and add one", p)
		}
		if !strings.Contains(string(docs), "`"+p+"`") {
			t.Errorf("docs/config.md does not document `%s`", p)
		}
	}
	def := Default()
	for _, k := range keyEffects {
		t.Run(k.key+"="+k.yaml, func(t *testing.T) {
			got, err := Parse("cadre.yaml", []byte(k.yaml+"\n"), nil)
			if k.refused != "" {
				if err == nil || err.Error() != k.refused {
					t.Fatalf("error = %v, want %q", err, k.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if k.by == "" {
				t.Error("no consumer named in by")
			}
			if before, after := k.read(def), k.read(got); cmp.Equal(before, after) {
				t.Errorf("%s has no effect: consumers read %v with it and without it", k.key, after)
			}
		})
	}
}

func TestStepTimeout(t *testing.T) {
	cfg, err := Parse("cadre.yaml", []byte("defaults: {timeout: 5m}\nrunners: {slow: {type: exec, command: x, timeout: 1h}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]time.Duration{"slow": time.Hour, "claude": 5 * time.Minute, "unknown": 5 * time.Minute} {
		if got := cfg.StepTimeout(name); got != want {
			t.Errorf("StepTimeout(%q) = %v, want %v", name, got, want)
		}
	}
}
