package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// env returns a getenv backed by m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefault(t *testing.T) {
	want := Config{
		BaseBranch: "main",
		TasksDir:   "tasks",
		Defaults:   Defaults{Runner: "claude", Workflow: "auto", Timeout: Duration(20 * time.Minute)},
		Roles:      map[string]RoleConfig{},
		Runners:    map[string]RunnerConfig{},
		Prices:     map[string]Price{},
		Limits: Limits{
			ParallelIssues: 3, ParallelAgents: 3, BudgetUSD: 0, AuditPassRating: 8, MaxAttempts: 2,
			MaxReviewRounds: 2, EscalateBelowConfidence: 5, MaxInsufficientLoops: 5, MaxIterations: 3, ApproveGoal: true,
			KillGrace: Duration(10 * time.Second),
		},
		GitHub: ForgeHost{TokenEnv: "GITHUB_TOKEN", APIURL: "https://api.github.com/", Comments: true, WriteInterval: Duration(250 * time.Millisecond),
			PollInterval: Duration(time.Minute)},
		Telemetry: Telemetry{ServiceName: "cadre"},
		Tracker:   Tracker{States: TrackerStates{Started: "In Progress", Review: "In Review", Done: "Done"}},
		GitLab: ForgeHost{TokenEnv: "GITLAB_TOKEN", APIURL: DefaultGitLabAPI, Comments: true, WriteInterval: Duration(250 * time.Millisecond),
			PollInterval: Duration(time.Minute)},
		Follow: Follow{CIFailed: Rounds{2}, ChangesRequested: Rounds{3}, Conflict: Rounds{1}, Merge: MergeOff,
			Verify: []string{"build", "test"}, ChecksTimeout: Duration(time.Hour), PauseLabel: "cadre:needs-human"},
		Commit:   Commit{Format: "plain"},
		Sandbox:  Sandbox{Mode: "auto"},
		Selector: Selector{MinSamples: 3, Explore: 0.5},
		Engine:   EngineEmbedded,
		Temporal: Temporal{Address: "127.0.0.1:7233", Namespace: "default", TaskQueue: "cadre"},
	}
	if diff := cmp.Diff(want, Default(), ignoreWhere); diff != "" {
		t.Errorf("Default() mismatch (-want +got):\n%s", diff)
	}
	// Each call gives fresh maps, so callers may edit theirs.
	a := Default()
	a.Roles["x"] = RoleConfig{Runner: "y"}
	if _, ok := Default().Roles["x"]; ok {
		t.Error("Default() shares its Roles map between calls")
	}
}

func TestParseSpecExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "spec-example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The example asks for the model selector without listing its
	// candidates: refused on its line rather than failing the run later.
	_, err = Parse("cadre.yaml", data, nil)
	wantErr := "cadre.yaml:9: roles.judge.runner: auto (the model selector) needs selector.candidates to choose from, e.g. selector: {candidates: [claude, codex]}"
	if err == nil || err.Error() != wantErr {
		t.Fatalf("Parse(spec example) error = %v, want %q", err, wantErr)
	}
	data = []byte(strings.Replace(string(data), "  judge: {runner: auto}", "  judge: {runner: ollama}", 1))
	got, err := Parse("cadre.yaml", data, nil)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := Config{
		Project:    "my-project",
		Repository: "owner/repo",
		BaseBranch: "main",
		TasksDir:   "tasks",
		Commands:   Commands{Install: "", Build: "go build ./...", Test: "go test ./...", Lint: "go vet ./..."},
		Defaults:   Defaults{Runner: "claude", Model: "", Workflow: "auto", Timeout: Duration(20 * time.Minute)},
		Roles: map[string]RoleConfig{
			"code-reviewer": {Runner: "codex"},
			"judge":         {Runner: "ollama"},
		},
		Runners: map[string]RunnerConfig{
			"claude":   {Command: "claude", Args: []string{}, Env: []string{"ANTHROPIC_API_KEY"}},
			"ollama":   {URL: "http://127.0.0.1:11434", Model: "qwen2.5-coder"},
			"my-agent": {Type: "exec", Command: "./scripts/agent.sh", Args: []string{}},
			"fake":     {Type: "script", Scenario: "testdata/scenario.yaml"},
		},
		Prices: map[string]Price{},
		Limits: Limits{
			ParallelIssues: 3, ParallelAgents: 3, BudgetUSD: 0, AuditPassRating: 8, MaxAttempts: 2,
			MaxReviewRounds: 2, EscalateBelowConfidence: 5, MaxInsufficientLoops: 5, MaxIterations: 3, ApproveGoal: true,
			KillGrace: Duration(10 * time.Second),
		},
		GitHub: ForgeHost{TokenEnv: "GITHUB_TOKEN", APIURL: "https://api.github.com/", Labels: []string{}, Draft: false, Comments: true, WriteInterval: Duration(250 * time.Millisecond),
			PollInterval: Duration(time.Minute)},
		Telemetry: Telemetry{ServiceName: "cadre"},
		Tracker:   Tracker{States: TrackerStates{Started: "In Progress", Review: "In Review", Done: "Done"}},
		GitLab: ForgeHost{TokenEnv: "GITLAB_TOKEN", APIURL: DefaultGitLabAPI, Comments: true, WriteInterval: Duration(250 * time.Millisecond),
			PollInterval: Duration(time.Minute)},
		Follow: Follow{CIFailed: Rounds{2}, ChangesRequested: Rounds{3}, Conflict: Rounds{1}, Merge: MergeOff,
			Verify: []string{"build", "test"}, ChecksTimeout: Duration(time.Hour), PauseLabel: "cadre:needs-human"},
		Commit:   Commit{Format: "plain"},
		Sandbox:  Sandbox{Mode: "none", Network: "allow"},
		Selector: Selector{MinSamples: 3, Explore: 0.5},
		Engine:   EngineEmbedded,
		Temporal: Temporal{Address: "127.0.0.1:7233", Namespace: "default", TaskQueue: "cadre"},
	}
	if diff := cmp.Diff(want, got, ignoreWhere); diff != "" {
		t.Errorf("Parse(spec example) mismatch (-want +got):\n%s", diff)
	}
}

func TestParseValues(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		edit func(*Config) // applied to Default() to get the expected result
	}{
		{"empty file", "", func(*Config) {}},
		{"comments only", "# nothing here\n", func(*Config) {}},
		{"document marker only", "---\n", func(*Config) {}},
		{"byte order mark", "\uFEFFproject: p\n", func(c *Config) { c.Project = "p" }},
		{"null keeps the default", "base_branch:\ndefaults: {timeout: ~}\nlimits:\n", func(*Config) {}},
		{"partial section keeps other defaults", "limits: {max_attempts: 4}\n",
			func(c *Config) { c.Limits.MaxAttempts = 4 }},
		{"number in a string field", "base_branch: 2024\n", func(c *Config) { c.BaseBranch = "2024" }},
		{"quoted string", "project: 'a: b'\n", func(c *Config) { c.Project = "a: b" }},
		{"block scalar", "commands:\n  test: |\n    go test ./...\n", func(c *Config) { c.Commands.Test = "go test ./...\n" }},
		{"integer budget", "limits: {budget_usd: 5}\n", func(c *Config) { c.Limits.BudgetUSD = 5 }},
		{"fractional budget", "limits: {budget_usd: 2.5}\n", func(c *Config) { c.Limits.BudgetUSD = 2.5 }},
		{"duration", "defaults: {timeout: 90s}\n", func(c *Config) { c.Defaults.Timeout = Duration(90 * time.Second) }},
		{"labels and draft", "github: {labels: [cadre, bot], draft: true}\n",
			func(c *Config) { c.GitHub.Labels = []string{"cadre", "bot"}; c.GitHub.Draft = true }},
		{"runner entry with no settings", "runners:\n  claude:\n", func(c *Config) { c.Runners["claude"] = RunnerConfig{} }},
		{"runner timeout", "runners: {x: {type: exec, timeout: 5m}}\n",
			func(c *Config) { c.Runners["x"] = RunnerConfig{Type: "exec", Timeout: Duration(5 * time.Minute)} }},
		{"anchor and alias", "roles:\n  a: &r {runner: codex, model: m}\n  b: *r\n", func(c *Config) {
			c.Roles["a"] = RoleConfig{Runner: "codex", Model: "m"}
			c.Roles["b"] = RoleConfig{Runner: "codex", Model: "m"}
		}},
		{"merge key, own keys win", "runners:\n  base: &b {type: exec, command: run.sh, args: [-v]}\n  fast:\n    <<: *b\n    args: [-q]\n",
			func(c *Config) {
				c.Runners["base"] = RunnerConfig{Type: "exec", Command: "run.sh", Args: []string{"-v"}}
				c.Runners["fast"] = RunnerConfig{Type: "exec", Command: "run.sh", Args: []string{"-q"}}
			}},
		{"merge of a list, earlier wins",
			"roles:\n  x: &x {runner: a}\n  y: &y {runner: b, model: m}\n  z:\n    <<: [*x, *y]\n",
			func(c *Config) {
				c.Roles["x"] = RoleConfig{Runner: "a"}
				c.Roles["y"] = RoleConfig{Runner: "b", Model: "m"}
				c.Roles["z"] = RoleConfig{Runner: "a", Model: "m"}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("cadre.yaml", []byte(tt.yaml), nil)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := Default()
			tt.edit(&want)
			if diff := cmp.Diff(want, got, ignoreWhere); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"unknown key with suggestion",
			"project: p\nlimits:\n  paralel_issues: 2\n",
			`cadre.yaml:3: unknown key "paralel_issues" in limits (did you mean "parallel_issues"?)`},
		{"unknown top-level key with suggestion",
			"projet: p\n",
			`cadre.yaml:1: unknown key "projet" (did you mean "project"?)`},
		{"unknown key with hyphen",
			"base-branch: dev\n",
			`cadre.yaml:1: unknown key "base-branch" (did you mean "base_branch"?)`},
		{"unknown key in a runner entry",
			"runners:\n  claude: {comand: claude}\n",
			`cadre.yaml:2: unknown key "comand" in runners.claude (did you mean "command"?)`},
		{"swapped letters",
			"roles:\n  judge: {modle: x}\n",
			`cadre.yaml:2: unknown key "modle" in roles.judge (did you mean "model"?)`},
		{"unknown key without a close match lists the keys",
			"sandbox:\n  image: alpine\n",
			`cadre.yaml:2: unknown key "image" in sandbox (valid keys: mode, network, allow_hosts, trust_repo, caches, allow_unconfined)`},
		{"word for an integer",
			"limits:\n  max_attempts: two\n",
			`cadre.yaml:2: limits.max_attempts: want an integer, got "two"`},
		{"fraction for an integer",
			"limits: {parallel_agents: 2.5}\n",
			`cadre.yaml:1: limits.parallel_agents: want an integer, got "2.5"`},
		{"word for a number",
			"limits: {budget_usd: lots}\n",
			`cadre.yaml:1: limits.budget_usd: want a number, got "lots"`},
		{"word for a bool",
			"github: {draft: maybe}\n",
			`cadre.yaml:1: github.draft: want true or false, got "maybe"`},
		{"bad duration",
			"defaults:\n  timeout: 20 minutes\n",
			`cadre.yaml:2: defaults.timeout: want a duration like "20m" or "90s", got "20 minutes"`},
		{"bare number for a duration",
			"defaults: {timeout: 90}\n",
			`cadre.yaml:1: defaults.timeout: want a duration like "20m" or "90s", got "90"`},
		{"list for a string",
			"project: [a, b]\n",
			`cadre.yaml:1: project: want a string, got a list`},
		{"mapping for a string",
			"commands:\n  test:\n    run: go test\n",
			`cadre.yaml:3: commands.test: want a string, got a mapping`},
		{"string for a list",
			"runners: {claude: {args: --verbose}}\n",
			`cadre.yaml:1: runners.claude.args: want a list, got "--verbose"`},
		{"mapping in a list",
			"github:\n  labels:\n    - a\n    - {b: c}\n",
			`cadre.yaml:4: github.labels[1]: want a string, got a mapping`},
		{"null in a list",
			"github: {labels: [a, ~]}\n",
			`cadre.yaml:1: github.labels[1]: want a value, got null`},
		{"string for a section",
			"limits: 3\n",
			`cadre.yaml:1: limits: want a mapping, got "3"`},
		{"string for a role",
			"roles:\n  judge: claude\n",
			`cadre.yaml:2: roles.judge: want a mapping, got "claude"`},
		{"top level is a list",
			"- a\n- b\n",
			`cadre.yaml:1: want a mapping of settings (key: value) at the top level, got a list`},
		{"top level is a string",
			"hello\n",
			`cadre.yaml:1: want a mapping of settings (key: value) at the top level, got "hello"`},
		{"duplicate key",
			"limits:\n  max_attempts: 2\n  max_attempts: 3\n",
			`cadre.yaml:3: limits.max_attempts: duplicate key (first set on line 2); keep one`},
		{"two documents",
			"project: a\n---\nproject: b\n",
			`cadre.yaml:3: more than one YAML document; keep all settings in one`},
		{"syntax error",
			"project: p\nlimits: [\n",
			`cadre.yaml:2: invalid YAML: sequence end token ']' not found`},
		{"tab indentation",
			"limits:\n\tmax_attempts: 2\n",
			`cadre.yaml:2: invalid YAML: found character '\t' that cannot start any token; indent with spaces, not tabs`},
		{"empty runner name",
			"runners:\n  \"\": {type: exec}\n",
			`cadre.yaml:2: runners: want a name as key, got ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("cadre.yaml", []byte(tt.yaml), nil)
			if err == nil {
				t.Fatalf("Parse succeeded, want error %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
		})
	}
}

func TestValidationErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want string
	}{
		{"max_attempts below one", "limits:\n  max_attempts: 0\n", nil,
			`cadre.yaml:2: limits.max_attempts: want 1 or more, got 0`},
		{"negative limit", "limits: {max_review_rounds: -1}\n", nil,
			`cadre.yaml:1: limits.max_review_rounds: want 0 or more, got -1`},
		{"no parallelism", "limits: {parallel_issues: 0}\n", nil,
			`cadre.yaml:1: limits.parallel_issues: want 1 or more, got 0`},
		{"negative budget", "limits: {budget_usd: -1.5}\n", nil,
			`cadre.yaml:1: limits.budget_usd: want 0 (no limit) or more, got -1.5`},
		{"rating above ten", "\nlimits:\n  audit_pass_rating: 11\n", nil,
			`cadre.yaml:3: limits.audit_pass_rating: want 0 to 10, got 11`},
		{"negative confidence", "limits: {escalate_below_confidence: -1}\n", nil,
			`cadre.yaml:1: limits.escalate_below_confidence: want 0 to 10, got -1`},
		{"zero timeout", "defaults: {timeout: 0s}\n", nil,
			`cadre.yaml:1: defaults.timeout: want a duration above zero, got "0s"`},
		{"negative runner timeout", "runners:\n  x:\n    timeout: -1m\n", nil,
			`cadre.yaml:3: runners.x.timeout: want a duration above zero, got "-1m0s"`},
		{"sandbox mode", "sandbox: {mode: docker}\n", nil,
			`cadre.yaml:1: sandbox.mode: want auto, none or bwrap, got "docker"`},
		{"sandbox network", "sandbox: {network: some}\n", nil,
			`cadre.yaml:1: sandbox.network: want allow, deny or model-only, got "some"`},
		{"repository not owner/repo", "repository: https://github.com/o/r\n", nil,
			`cadre.yaml:1: repository: want owner/repo (on GitLab, group/project or group/sub/project), got "https://github.com/o/r"`},
		{"api url without scheme", "github: {api_url: api.github.com}\n", nil,
			`cadre.yaml:1: github.api_url: want an http:// or https:// URL, got "api.github.com"`},
		{"runner url", "runners: {ollama: {url: \"localhost:11434\"}}\n", nil,
			`cadre.yaml:1: runners.ollama.url: want an http:// or https:// URL, got "localhost:11434"`},
		{"empty base branch", "base_branch: \"\"\n", nil,
			`cadre.yaml:1: base_branch: want a branch name, got ""`},
		{"absolute tasks dir", "tasks_dir: /etc\n", nil,
			`cadre.yaml:1: tasks_dir: want a directory inside the repository, relative to its root (e.g. tasks), got "/etc"`},
		{"tasks dir outside", "tasks_dir: ../other/tasks\n", nil,
			`cadre.yaml:1: tasks_dir: want a directory inside the repository, relative to its root (e.g. tasks), got "../other/tasks"`},
		{"empty label", "github: {labels: [\"\"]}\n", nil,
			`cadre.yaml:1: github.labels[0]: want a label name, got ""`},
		{"bad value from the environment", "", map[string]string{"CADRE_LIMITS_MAX_ATTEMPTS": "0"},
			`CADRE_LIMITS_MAX_ATTEMPTS: want 1 or more, got 0`},
		{"issue state", "github: {query_state: opn}\n", nil,
			`cadre.yaml:1: github.query_state: want open, closed or all, got "opn"`},
		{"issue limit", "github: {query_limit: -3}\n", nil,
			`cadre.yaml:1: github.query_limit: want 0 or more, got -3`},
		{"issue state from the environment", "", map[string]string{"CADRE_GITHUB_QUERY_STATE": "shut"},
			`CADRE_GITHUB_QUERY_STATE: want open, closed or all, got "shut"`},
		{"negative price", "prices:\n  m1:\n    input_per_mtok: 1\n    output_per_mtok: -4\n", nil,
			`cadre.yaml:4: prices.m1.output_per_mtok: want a price of 0 or more (US dollars per million tokens), got -4`},
		// A bad element of a list set by a variable is blamed on it.
		{"list element from the environment", "", map[string]string{"CADRE_SANDBOX_ALLOW_HOSTS": "ok.example, http://x"},
			`CADRE_SANDBOX_ALLOW_HOSTS: want host or host:port (no scheme, path or wildcard), got "http://x"`},
		{"notify kind from the environment", "notify: {webhook: \"http://127.0.0.1:9/\"}\n", map[string]string{"CADRE_NOTIFY_ON": "paused,bogus"},
			`CADRE_NOTIFY_ON: want paused, failed, completed or budget, got "bogus"`},
		{"notify kinds without a webhook", "notify: {on: [paused]}\n", nil,
			`cadre.yaml:1: notify.on: needs notify.webhook, the URL to post to`},
		{"environment blamed over the file", "sandbox: {mode: bwrap}\n", map[string]string{"CADRE_SANDBOX_MODE": "jail"},
			`CADRE_SANDBOX_MODE: want auto, none or bwrap, got "jail"`},
		// A mode from the environment that leaves the file's network
		// setting unenforced is blamed on the variable.
		{"mode from the environment under the file's network", "sandbox: {mode: bwrap, network: deny}\n", map[string]string{"CADRE_SANDBOX_MODE": "auto"},
			`CADRE_SANDBOX_MODE: auto may run agents unconfined, where nothing can enforce sandbox.network deny (cadre.yaml:1: sandbox.network); want bwrap, or network allow`},
		{"network with mode none", "sandbox: {mode: none, network: deny}\n", nil,
			`cadre.yaml:1: sandbox.network: deny needs sandbox.mode: bwrap (sandbox.mode none runs agents unconfined, where nothing can enforce it); set mode: bwrap or use allow`},
		// A network setting without a sandbox to enforce it is refused.
		{"network deny", "sandbox: {network: deny}\n", nil,
			`cadre.yaml:1: sandbox.network: deny needs sandbox.mode: bwrap (sandbox.mode auto may run agents unconfined, where nothing can enforce it); set mode: bwrap or use allow`},
		{"network model-only", "sandbox: {network: model-only}\n", nil,
			`cadre.yaml:1: sandbox.network: model-only needs sandbox.mode: bwrap (sandbox.mode auto may run agents unconfined, where nothing can enforce it); set mode: bwrap or use allow`},
		{"allow_hosts with a scheme", "sandbox: {mode: bwrap, network: model-only, allow_hosts: [\"https://x.org\"]}\n", nil,
			`cadre.yaml:1: sandbox.allow_hosts[0]: want host or host:port (no scheme, path or wildcard), got "https://x.org"`},
		{"allow_hosts with a bad port", "sandbox: {mode: bwrap, network: model-only, allow_hosts: [\"x.org:99999\"]}\n", nil,
			`cadre.yaml:1: sandbox.allow_hosts[0]: want host or host:port (no scheme, path or wildcard), got "x.org:99999"`},
		{"allow_hosts without model-only", "sandbox: {mode: bwrap, network: deny, allow_hosts: [x.org]}\n", nil,
			`cadre.yaml:1: sandbox.allow_hosts: applies only to network: model-only (network deny reaches none); remove it or set network: model-only`},
		{"allow_hosts with mode none", "sandbox: {mode: none, allow_hosts: [x.org]}\n", nil,
			`cadre.yaml:1: sandbox.allow_hosts: applies only to network: model-only, and sandbox.mode none confines nothing; remove it or set mode: bwrap`},
		{"allow_hosts when every item is trusted", "sandbox: {trust_repo: true, allow_hosts: [x.org]}\n", nil,
			`cadre.yaml:1: sandbox.allow_hosts: applies to untrusted items' network model-only, and sandbox.trust_repo true trusts every item; remove it or set network: model-only`},
		{"cache not absolute", "sandbox:\n  caches: [/opt/c, .cache/x]\n", nil,
			`cadre.yaml:2: sandbox.caches[1]: want an absolute path or ~/path, got ".cache/x"`},
		{"cache with a bad suffix", "sandbox: {caches: [\"/opt/c:wr\"]}\n", nil,
			`cadre.yaml:1: sandbox.caches[0]: want PATH, PATH:ro or PATH:rw, got "/opt/c:wr"`},
		{"cache not clean", "sandbox: {caches: [\"~/x/../.ssh\"]}\n", nil,
			`cadre.yaml:1: sandbox.caches[0]: want a clean path (no .., . or trailing /), got "~/x/../.ssh"`},
		{"cache is the home", "sandbox: {caches: [\"~/\"]}\n", nil,
			`cadre.yaml:1: sandbox.caches[0]: names the whole root or home, got "~/"; name a cache directory`},
		{"cache is the root", "sandbox: {caches: [\"/:rw\"]}\n", nil,
			`cadre.yaml:1: sandbox.caches[0]: names the whole root or home, got "/:rw"; name a cache directory`},
		{"cache holds credentials", "sandbox: {caches: [\"~/.config\"]}\n", nil,
			`cadre.yaml:1: sandbox.caches[0]: "~/.config" would show ~/.config/gcloud, which holds credentials; name a cache directory`},
		{"cache from the environment", "", map[string]string{"CADRE_SANDBOX_CACHES": "/opt/c,~/.ssh/x"},
			`CADRE_SANDBOX_CACHES: "~/.ssh/x" would show ~/.ssh, which holds credentials; name a cache directory`},
		{"caches with mode none", "sandbox: {mode: none, caches: [/opt/c]}\n", nil,
			`cadre.yaml:1: sandbox.caches: applies only under a sandbox, and sandbox.mode none runs agents unconfined (they see every cache); remove it or set mode: bwrap`},
		{"default runner auto", "defaults: {runner: auto}\n", nil,
			`cadre.yaml:1: defaults.runner: auto (the model selector) needs selector.candidates to choose from, e.g. selector: {candidates: [claude, codex]}`},
		{"default runner auto from the environment", "", map[string]string{"CADRE_DEFAULTS_RUNNER": "auto"},
			`CADRE_DEFAULTS_RUNNER: auto (the model selector) needs selector.candidates to choose from, e.g. selector: {candidates: [claude, codex]}`},
		{"role runner auto", "roles:\n  coder: {runner: codex}\n  judge: {runner: auto}\n", nil,
			`cadre.yaml:3: roles.judge.runner: auto (the model selector) needs selector.candidates to choose from, e.g. selector: {candidates: [claude, codex]}`},
		{"runner named auto", "runners:\n  auto: {type: exec, command: x}\n", nil,
			`cadre.yaml:2: runners.auto: the name auto is reserved for the model selector; give this runner another name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("cadre.yaml", []byte(tt.yaml), env(tt.env))
			if err == nil {
				t.Fatalf("Parse succeeded, want error %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
		})
	}
}

func TestEnvOverrides(t *testing.T) {
	file := "project: from-file\nlimits: {max_attempts: 3}\ngithub: {labels: [a]}\n"
	tests := []struct {
		name string
		env  map[string]string
		edit func(*Config) // applied to the file's result
	}{
		{"none", nil, func(*Config) {}},
		{"empty counts as unset", map[string]string{"CADRE_PROJECT": ""}, func(*Config) {}},
		{"top-level key over the file", map[string]string{"CADRE_PROJECT": "env"}, func(c *Config) { c.Project = "env" }},
		{"base branch", map[string]string{"CADRE_BASE_BRANCH": "dev"}, func(c *Config) { c.BaseBranch = "dev" }},
		{"tasks dir", map[string]string{"CADRE_TASKS_DIR": "todo"}, func(c *Config) { c.TasksDir = "todo" }},
		{"repository", map[string]string{"CADRE_REPOSITORY": "o/r"}, func(c *Config) { c.Repository = "o/r" }},
		{"command", map[string]string{"CADRE_COMMANDS_TEST": "make test"}, func(c *Config) { c.Commands.Test = "make test" }},
		{"default runner", map[string]string{"CADRE_DEFAULTS_RUNNER": "codex"}, func(c *Config) { c.Defaults.Runner = "codex" }},
		{"default model", map[string]string{"CADRE_DEFAULTS_MODEL": "m1"}, func(c *Config) { c.Defaults.Model = "m1" }},
		{"timeout", map[string]string{"CADRE_DEFAULTS_TIMEOUT": "1h"},
			func(c *Config) { c.Defaults.Timeout = Duration(time.Hour) }},
		{"integer over the file", map[string]string{"CADRE_LIMITS_MAX_ATTEMPTS": "5"}, func(c *Config) { c.Limits.MaxAttempts = 5 }},
		{"surrounding spaces", map[string]string{"CADRE_LIMITS_PARALLEL_ISSUES": " 7 "}, func(c *Config) { c.Limits.ParallelIssues = 7 }},
		{"number", map[string]string{"CADRE_LIMITS_BUDGET_USD": "12.5"}, func(c *Config) { c.Limits.BudgetUSD = 12.5 }},
		{"token variable", map[string]string{"CADRE_GITHUB_TOKEN_ENV": "GH_TOKEN"}, func(c *Config) { c.GitHub.TokenEnv = "GH_TOKEN" }},
		{"bool", map[string]string{"CADRE_GITHUB_DRAFT": "true"}, func(c *Config) { c.GitHub.Draft = true }},
		{"list is comma-separated", map[string]string{"CADRE_GITHUB_LABELS": "x, y,,z"},
			func(c *Config) { c.GitHub.Labels = []string{"x", "y", "z"} }},
		{"sandbox", map[string]string{"CADRE_SANDBOX_MODE": "none", "CADRE_SANDBOX_NETWORK": "allow"},
			func(c *Config) { c.Sandbox = Sandbox{Mode: "none", Network: "allow"} }},
		{"optional bool", map[string]string{"CADRE_SANDBOX_TRUST_REPO": "false"},
			func(c *Config) { f := false; c.Sandbox.TrustRepo = &f }},
		{"maps have no variables", map[string]string{"CADRE_ROLES": "x", "CADRE_RUNNERS_CLAUDE_COMMAND": "y"}, func(*Config) {}},
	}
	base, err := Parse("cadre.yaml", []byte(file), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("cadre.yaml", []byte(file), env(tt.env))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want, _ := Parse("cadre.yaml", []byte(file), nil)
			tt.edit(&want)
			if diff := cmp.Diff(want, got, ignoreWhere); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if base.Project != "from-file" {
		t.Fatalf("file not applied: project %q", base.Project)
	}
}

func TestEnvErrors(t *testing.T) {
	tests := []struct {
		name, key, value, want string
	}{
		{"integer", "CADRE_LIMITS_MAX_ATTEMPTS", "x", `CADRE_LIMITS_MAX_ATTEMPTS: want an integer, got "x"`},
		{"fraction for an integer", "CADRE_LIMITS_PARALLEL_AGENTS", "1.5", `CADRE_LIMITS_PARALLEL_AGENTS: want an integer, got "1.5"`},
		{"number", "CADRE_LIMITS_BUDGET_USD", "ten", `CADRE_LIMITS_BUDGET_USD: want a number, got "ten"`},
		{"not a number", "CADRE_LIMITS_BUDGET_USD", "NaN", `CADRE_LIMITS_BUDGET_USD: want a number, got "NaN"`},
		{"bool", "CADRE_GITHUB_DRAFT", "sometimes", `CADRE_GITHUB_DRAFT: want true or false, got "sometimes"`},
		{"duration", "CADRE_DEFAULTS_TIMEOUT", "20", `CADRE_DEFAULTS_TIMEOUT: want a duration like "20m" or "90s", got "20"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("cadre.yaml", nil, env(map[string]string{tt.key: tt.value}))
			if err == nil {
				t.Fatalf("Parse succeeded, want error %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error\n got: %s\nwant: %s", err, tt.want)
			}
		})
	}
}

func TestEnvNames(t *testing.T) {
	cfg := Default()
	seen := map[string]string{}
	var names []string
	for _, k := range envKeys(&cfg) {
		name := envName(k.path)
		if other, dup := seen[name]; dup {
			t.Errorf("%s and %s share the variable %s", other, k.path, name)
		}
		seen[name] = k.path
		names = append(names, name)
	}
	for _, want := range []string{
		"CADRE_PROJECT", "CADRE_BASE_BRANCH", "CADRE_TASKS_DIR", "CADRE_DEFAULTS_RUNNER",
		"CADRE_DEFAULTS_TIMEOUT", "CADRE_LIMITS_MAX_ATTEMPTS", "CADRE_COMMANDS_TEST",
		"CADRE_GITHUB_TOKEN_ENV", "CADRE_SANDBOX_MODE", "CADRE_LIMITS_ESCALATE_BELOW_CONFIDENCE",
	} {
		if _, ok := seen[want]; !ok {
			t.Errorf("no setting is overridden by %s; have %v", want, names)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()

	t.Run("missing file gives defaults and env", func(t *testing.T) {
		got, err := Load(filepath.Join(dir, "cadre.yaml"), env(map[string]string{"CADRE_PROJECT": "p"}))
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		want := Default()
		want.Project = "p"
		if diff := cmp.Diff(want, got, ignoreWhere); diff != "" {
			t.Errorf("mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("file is read and named in errors", func(t *testing.T) {
		path := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(path, []byte("limits:\n  max_attempts: x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path, nil)
		want := path + `:2: limits.max_attempts: want an integer, got "x"`
		if err == nil || err.Error() != want {
			t.Errorf("Load error = %v, want %s", err, want)
		}
	})

	t.Run("unreadable path is an error", func(t *testing.T) {
		_, err := Load(dir, nil) // a directory
		if err == nil || !strings.HasPrefix(err.Error(), "read config: ") {
			t.Errorf("Load(dir) error = %v, want a read config error", err)
		}
	})
}

func TestRoleRunner(t *testing.T) {
	cfg := Default()
	cfg.Defaults.Runner = "claude"
	cfg.Defaults.Model = "opus"
	cfg.Roles = map[string]RoleConfig{
		"code-reviewer": {Runner: "codex"},
		"critic":        {Runner: "codex", Model: "o3"},
		"planner":       {Model: "sonnet"},
		"judge":         {Runner: "auto"},
		"triage":        {Runner: "ollama"},
		"same":          {Runner: "claude"},
	}
	cfg.Runners = map[string]RunnerConfig{"ollama": {Model: "qwen2.5-coder"}}
	tests := []struct {
		role, runner, model string
	}{
		{"code-writer", "claude", "opus"},     // not listed: defaults
		{"code-reviewer", "codex", ""},        // other runner: not the default model
		{"critic", "codex", "o3"},             // own model
		{"planner", "claude", "sonnet"},       // own model on the default runner
		{"judge", "auto", ""},                 // selector chooses
		{"triage", "ollama", "qwen2.5-coder"}, // runner entry's model
		{"same", "claude", "opus"},            // default runner named again
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			runner, model := cfg.RoleRunner(tt.role)
			if runner != tt.runner || model != tt.model {
				t.Errorf("RoleRunner(%q) = %q, %q; want %q, %q", tt.role, runner, model, tt.runner, tt.model)
			}
		})
	}
}

func TestRunnerType(t *testing.T) {
	cfg := Default()
	cfg.Runners = map[string]RunnerConfig{
		"my-agent": {Type: "exec", Command: "./agent.sh"},
		"claude":   {Command: "/opt/claude"},
	}
	tests := []struct{ name, want string }{
		{"my-agent", "exec"},   // named instance of a built-in
		{"claude", "claude"},   // entry without a type
		{"codex", "codex"},     // no entry
		{"unknown", "unknown"}, // left for the caller to reject
	}
	for _, tt := range tests {
		if got := cfg.RunnerType(tt.name); got != tt.want {
			t.Errorf("RunnerType(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDurationText(t *testing.T) {
	var d Duration
	if err := d.UnmarshalText([]byte("1h30m")); err != nil {
		t.Fatal(err)
	}
	if time.Duration(d) != 90*time.Minute {
		t.Errorf("UnmarshalText(1h30m) = %v", time.Duration(d))
	}
	b, _ := d.MarshalText()
	if string(b) != "1h30m0s" {
		t.Errorf("MarshalText = %q, want 1h30m0s", b)
	}
	err := d.UnmarshalText([]byte("soon"))
	if want := `want a duration like "20m" or "90s", got "soon"`; err == nil || err.Error() != want {
		t.Errorf("UnmarshalText(soon) error = %v, want %s", err, want)
	}
}

func TestClosest(t *testing.T) {
	names := []string{"runner", "model", "parallel_issues", "parallel_agents", "url"}
	tests := []struct{ key, want string }{
		{"runer", "runner"},
		{"Model", "model"},
		{"parallel_issue", "parallel_issues"},
		{"parallel_", ""}, // as near to both parallel keys: no guess
		{"uri", "url"},
		{"xyz", ""},
		{"timeout", ""},
	}
	for _, tt := range tests {
		if got := closest(tt.key, names); got != tt.want {
			t.Errorf("closest(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

// TestDocsListEveryKey keeps docs/config.md in step with the settings.
func TestDocsListEveryKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	cfg := Default()
	for _, k := range envKeys(&cfg) {
		if !strings.Contains(doc, "`"+k.path+"`") {
			t.Errorf("docs/config.md does not list `%s`", k.path)
		}
		if !strings.Contains(doc, "`"+envName(k.path)+"`") {
			t.Errorf("docs/config.md does not name `%s`", envName(k.path))
		}
	}
	for _, section := range []struct {
		name string
		v    any
	}{{"roles.NAME", RoleConfig{}}, {"runners.NAME", RunnerConfig{}}} {
		for _, f := range fieldsOf(reflect.TypeOf(section.v)) {
			if key := section.name + "." + f.name; !strings.Contains(doc, "`"+key+"`") {
				t.Errorf("docs/config.md does not list `%s`", key)
			}
		}
	}
}

// FuzzParse checks that no input panics and every error is one line.
func FuzzParse(f *testing.F) {
	seed, _ := os.ReadFile(filepath.Join("testdata", "spec-example.yaml"))
	f.Add(string(seed))
	f.Add("limits: {max_attempts: two}\n")
	f.Add("a: &x [*x]\n")
	f.Add("roles:\n  z:\n    <<: [*x]\n")
	f.Fuzz(func(t *testing.T, s string) {
		_, err := Parse("cadre.yaml", []byte(s), nil)
		if err != nil && strings.ContainsAny(err.Error(), "\n\r") {
			t.Errorf("error spans lines: %q", err)
		}
	})
}

func TestAliasExpansionIsBounded(t *testing.T) {
	// Each level refers to the previous one ten times: 10^8 expansions if
	// unbounded.
	var b strings.Builder
	b.WriteString("roles:\n  l0: &l0 {runner: a}\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d\n    <<: [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	_, err := Parse("cadre.yaml", []byte(b.String()), nil)
	want := "more than 10000 alias expansions; write the values out"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error = %v, want one ending %q", err, want)
	}
}

// ignoreWhere leaves out the positions Config records for later errors;
// TestWhere checks them.
var ignoreWhere = cmpopts.IgnoreUnexported(Config{})

func TestWhere(t *testing.T) {
	cfg, err := Parse("cadre.yaml", []byte("project: p\ndefaults:\n  runner: mine\nroles:\n  coder: {runner: x}\n"), func(k string) string {
		if k == "CADRE_DEFAULTS_MODEL" {
			return "m"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"defaults.runner":     "cadre.yaml:3: defaults.runner",
		"roles.coder.runner":  "cadre.yaml:5: roles.coder.runner",
		"defaults.model":      "CADRE_DEFAULTS_MODEL",
		"limits.max_attempts": "limits.max_attempts",
	} {
		if got := cfg.Where(path); got != want {
			t.Errorf("Where(%q) = %q, want %q", path, got, want)
		}
	}
}

// TestDocsExampleParses: the example at the top of docs/config.md is what a
// user copies first; it must be a file cadre accepts.
func TestDocsExampleParses(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "## Example\n\n```yaml\n")
	example, _, closed := strings.Cut(rest, "```")
	if !ok || !closed {
		t.Fatal("docs/config.md has no ```yaml block under ## Example")
	}
	if _, err := Parse("cadre.yaml", []byte(example), nil); err != nil {
		t.Errorf("the docs/config.md example is refused: %v", err)
	}
}
