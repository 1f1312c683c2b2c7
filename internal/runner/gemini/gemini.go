// Package gemini runs the Gemini CLI headless: `gemini --output-format json
// --approval-mode yolo --prompt=…`, in the item's working tree, with its tool
// calls approved so the agent can edit files and run commands there (unless
// the settings' Args choose another approval mode).
//
// The JSON output is one document written when the run ends, so this runner
// reports no progress while it runs. The reply is its `response`; tokens are
// summed over `stats.models.*.tokens` (thinking counted as output, cached
// prompt tokens apart from fresh ones) and priced per model from the price
// table, the cost marked estimated; `session_id` is the session to resume.
// An error document (on stderr) or the CLI's documented exit codes (41
// authentication, 53 turn limit) are returned as a *runner.Error.
package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
)

const (
	// maxStderr bounds the stderr kept to find an error document in.
	maxStderr = 256 << 10
	// Exit codes the Gemini CLI documents for fatal errors.
	exitAuth      = 41
	exitTurnLimit = 53
)

// Type describes the gemini runner type: the CLI and how to install it,
// the variables passed through when the settings list none (the Gemini API
// and Vertex AI credentials and endpoint the CLI reads), and, under a
// sandbox, the step's fresh home gets Gemini CLI's settings and login
// (~/.gemini/settings.json, oauth_creds.json, google_accounts.json), while
// model-only lets it reach the Gemini API and Google's sign-in.
var Type = runner.Descriptor{
	Type: "gemini", Kind: runner.TypeCLI,
	Caps:    runner.Caps{EditsFiles: true, ModelChoice: true},
	Program: "gemini", Install: "npm install -g @google/gemini-cli",
	Env: []string{
		"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL",
		"GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_GENAI_USE_VERTEXAI",
		"GOOGLE_APPLICATION_CREDENTIALS",
	},
	URLExample:  "https://host:port",
	SandboxHome: []string{".gemini/settings.json", ".gemini/oauth_creds.json", ".gemini/google_accounts.json"},
	ModelHosts:  []string{"https://generativelanguage.googleapis.com", "https://cloudcode-pa.googleapis.com", "https://oauth2.googleapis.com"},
}

// Runner runs one Gemini CLI process per step.
type Runner struct{ cliutil.Agent }

// New builds a gemini runner. Command defaults to "gemini"; a relative
// path is resolved against BaseDir. Env lists the variables passed through
// (default: Gemini and Google Cloud credentials); URL, when set, becomes
// GOOGLE_GEMINI_BASE_URL; Model is the default --model; Args are added
// after cadre's own flags. The Gemini CLI edits files and takes a model
// per step; its JSON output comes at the end (no streaming) and its cost
// is estimated from Prices.
func New(s runner.Settings) (runner.Runner, error) { return cliutil.New[Runner](Type)(s) }

// Run runs the Gemini CLI on inv.Prompt in inv.Dir.
func (r *Runner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	args, stdin := r.argv(inv)
	var stderr bytes.Buffer
	keep := func(stream, line string) {
		if stream == "stderr" && stderr.Len() < maxStderr {
			stderr.WriteString(line)
			stderr.WriteByte('\n')
		}
	}
	return r.Step(ctx, inv, cliutil.Call{Args: args, Stdin: stdin, Set: r.vars(), PromptFlag: "--prompt=", OnLine: keep,
		Result: func(stdout []byte, exit int) (runner.Result, *runner.Error) {
			got := parse(stdout, stderr.Bytes(), exit)
			out := runner.Result{Output: got.reply, SessionID: got.sessionID, Model: got.mainModel(), Usage: r.usage(got.models)}
			if out.Model == "" {
				out.Model = r.ModelFor(inv)
			}
			return out, got.failure
		}})
}

// usage sums the models' tokens and prices each model at its own rate: the
// CLI routes some calls to a cheaper model than the one that does the work.
func (r *Runner) usage(models map[string]event.Usage) event.Usage {
	var total event.Usage
	for name, u := range models {
		total = total.Add(cliutil.Estimate(r.Prices, name, u))
	}
	return total
}

// argv builds the CLI's arguments and, for a long prompt, its stdin (the
// CLI runs headless when stdin is not a terminal).
func (r *Runner) argv(inv runner.Invocation) ([]string, io.Reader) {
	args := []string{"--output-format", "json"}
	// The CLI turns a repeated option into a list it rejects, so an approval
	// mode chosen in the settings' args replaces cadre's.
	if !cliutil.HasFlag(r.Args, "--approval-mode", "--yolo", "-y") {
		args = append(args, "--approval-mode", "yolo")
	}
	args = append(args, cliutil.Flag("--model", r.ModelFor(inv))...)
	args = append(args, cliutil.Flag("--resume", inv.Session)...)
	// The context and output files live outside the working tree.
	args = append(args, cliutil.Flag("--include-directories=", cliutil.OutsideDirs(inv)...)...)
	args = append(args, r.Args...)
	if len(inv.Text()) > cliutil.MaxArgPrompt {
		return args, strings.NewReader(inv.Text())
	}
	// The "=" form keeps a prompt starting with "-" from reading as a flag.
	return append(args, "--prompt="+inv.Text()), nil
}

// vars are the variables set for the CLI: the base URL when set.
func (r *Runner) vars() map[string]string {
	// The item's working tree is where cadre was told to let the agent
	// work; an untrusted folder would turn off the approval mode.
	set := map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"}
	if r.URL != "" {
		set["GOOGLE_GEMINI_BASE_URL"] = r.URL
	}
	return set
}

// parsed is what one run's output said.
type parsed struct {
	reply     string
	sessionID string
	models    map[string]event.Usage
	failure   *runner.Error
}

// mainModel names the model that used the most tokens, the one that did the
// work rather than routed it.
func (p parsed) mainModel() string {
	names := make([]string, 0, len(p.models))
	for n := range p.models {
		names = append(names, n)
	}
	sort.Strings(names)
	best, most := "", int64(-1)
	for _, n := range names {
		u := p.models[n]
		if t := u.InputTokens + u.OutputTokens + u.CacheReadTokens; t > most {
			best, most = n, t
		}
	}
	return best
}

// document is the CLI's JSON output, or its error document.
type document struct {
	SessionID string  `json:"session_id"`
	Response  *string `json:"response"`
	Stats     *struct {
		Models map[string]struct {
			Tokens struct {
				Input      *int64 `json:"input"` // prompt minus cached; newer CLIs only
				Prompt     int64  `json:"prompt"`
				Candidates int64  `json:"candidates"`
				Cached     int64  `json:"cached"`
				Thoughts   int64  `json:"thoughts"`
				Tool       int64  `json:"tool"`
			} `json:"tokens"`
		} `json:"models"`
	} `json:"stats"`
	Error *struct {
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// parse reads the output document from stdout and an error document from
// stdout or stderr; exitCode classifies a failure that left no document.
func parse(stdout, stderr []byte, exitCode int) parsed {
	var p parsed
	doc, _ := findDocument(stdout)
	if doc != nil {
		p.sessionID = doc.SessionID
		if doc.Response != nil {
			p.reply = *doc.Response
		}
		if doc.Stats != nil {
			p.models = make(map[string]event.Usage, len(doc.Stats.Models))
			for name, m := range doc.Stats.Models {
				t := m.Tokens
				fresh := t.Prompt - t.Cached
				if t.Input != nil {
					fresh = *t.Input
				}
				p.models[name] = event.Usage{
					InputTokens:     fresh + t.Tool,
					CacheReadTokens: t.Cached,
					// Thinking is billed as output.
					OutputTokens: t.Candidates + t.Thoughts,
				}
			}
		}
	}
	if doc == nil || doc.Error == nil {
		if errDoc, ok := findDocument(stderr); ok && errDoc.Error != nil {
			doc = errDoc
			if p.sessionID == "" {
				p.sessionID = errDoc.SessionID
			}
		}
	}
	switch {
	case doc != nil && doc.Error != nil:
		e := doc.Error
		code, _ := strconv.Atoi(strings.Trim(string(e.Code), `"`))
		if code == 0 {
			code = exitCode
		}
		p.failure = &runner.Error{Kind: classify(e.Type, code, e.Message), Msg: cliutil.Short(e.Message, cliutil.MsgMax), RetryAfter: cliutil.RetryAfter(e.Message)}
	case exitCode == exitAuth:
		p.failure = &runner.Error{Kind: runner.KindAuth, Msg: fmt.Sprintf("exit code %d (authentication)", exitCode)}
	case exitCode == exitTurnLimit:
		p.failure = &runner.Error{Kind: runner.KindTurnLimit, Msg: fmt.Sprintf("exit code %d (turn limit)", exitCode)}
	}
	return p
}

// findDocument finds the first JSON object in data that looks like the
// CLI's output; the CLI may print a notice line before it.
func findDocument(data []byte) (*document, bool) {
	for off := 0; off < len(data); {
		line := data[off:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		if trimmed := bytes.TrimLeft(line, " \t\r"); len(trimmed) > 0 && trimmed[0] == '{' {
			var doc document
			start := off + len(line) - len(trimmed)
			if json.NewDecoder(bytes.NewReader(data[start:])).Decode(&doc) == nil &&
				(doc.Response != nil || doc.Stats != nil || doc.Error != nil) {
				return &doc, true
			}
		}
		off += len(line)
	}
	return nil, false
}

// classify maps a Gemini CLI error to an error kind: the error type and code
// first (the CLI's fatal errors are typed), then the words of the message.
// A daily quota is told from a per-minute rate limit by its wording; both
// arrive as 429 RESOURCE_EXHAUSTED.
func classify(typ string, code int, msg string) runner.Kind {
	m := strings.ToLower(msg)
	switch {
	case typ == "FatalAuthenticationError" || code == exitAuth || code == 401 ||
		cliutil.ContainsAny(m, "api key not valid", "api_key_invalid", "invalid api key", "unauthenticated", "gemini_api_key", "auth method"):
		return runner.KindAuth
	case typ == "FatalTurnLimitedError" || code == exitTurnLimit:
		return runner.KindTurnLimit
	case cliutil.ContainsAny(m, "per day", "perday", "daily", "billing account", "spending cap"):
		return runner.KindQuota
	case code == 429 || code == 503 ||
		cliutil.ContainsAny(m, "429", "resource_exhausted", "resource has been exhausted", "rate limit", "quota exceeded", "exceeded your current quota", "overloaded"):
		return runner.KindRateLimit
	case cliutil.ContainsAny(m, "max session turns", "context window", "exceeds the maximum number of tokens", "token count exceeds"):
		return runner.KindTurnLimit
	}
	return runner.KindBackend
}
