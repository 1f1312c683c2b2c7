package lineartest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// gqlError is one entry of a GraphQL answer's errors, as Linear writes it.
type gqlError struct {
	Message    string         `json:"message"`
	Path       []string       `json:"path,omitempty"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

// answer is one response before it is written.
type answer struct {
	status int
	data   any // the data member; nil is written as null
	errs   []gqlError
}

func fail(status int, code, typ, msg string) answer {
	return answer{status: status, errs: []gqlError{{Message: msg, Extensions: map[string]any{
		"code": code, "type": typ, "userError": true, "userPresentableMessage": msg}}}}
}

// invalid is a request the schema refuses: Linear answers 400.
func invalid(msg string) answer {
	return fail(http.StatusBadRequest, "GRAPHQL_VALIDATION_FAILED", "graphql error", msg)
}

// inputError is a valid request whose input Linear rejects: 200 with an
// error, data null.
func inputError(msg string) answer {
	return fail(http.StatusOK, "INPUT_ERROR", "invalid input", msg)
}

func notFound(what string) answer {
	a := inputError("Entity not found: " + what)
	a.errs[0].Extensions["userPresentableMessage"] = "Could not find referenced " + what + "."
	return a
}

// request is a GraphQL request as POSTed.
type request struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
}

func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/graphql" {
		http.NotFound(w, req)
		return
	}
	raw, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var r request
	decodeErr := json.Unmarshal(raw, &r)
	s.mu.Lock()
	s.calls = append(s.calls, Call{Operation: r.OperationName, Query: r.Query, Variables: r.Variables, Header: req.Header.Clone()})
	n := len(s.calls)
	f, faulted := s.faults[n]
	delete(s.faults, n)
	var a answer
	switch {
	case faulted && !f.Lost:
		a = s.fault(f, w.Header())
	case !s.authorized(req.Header.Get("Authorization")):
		a = fail(http.StatusBadRequest, "AUTHENTICATION_ERROR", "authentication error", "Authentication required, not authenticated")
	case decodeErr != nil:
		a = invalid("Invalid JSON body: " + decodeErr.Error())
	default:
		a = s.dispatch(r)
	}
	s.calls[n-1].Status = a.status
	s.budgetHeaders(w.Header(), faulted && !f.Lost && f.Code == "RATELIMITED")
	s.mu.Unlock()
	if faulted && f.Lost {
		// Carried out, then the connection drops before any answer.
		panic(http.ErrAbortHandler)
	}
	write(w, a)
}

func write(w http.ResponseWriter, a answer) {
	body := map[string]any{"data": a.data}
	if len(a.errs) > 0 {
		body["errors"] = a.errs
	}
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(body)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(a.status)
	_, _ = w.Write(b.Bytes())
}

// authorized checks the Authorization header as Linear reads it: a
// personal API key bare, an OAuth token after "Bearer ".
func (s *Server) authorized(h string) bool {
	if s.Token == "" {
		return h != ""
	}
	if strings.HasPrefix(s.Token, "lin_oauth_") {
		return h == "Bearer "+s.Token
	}
	return h == s.Token
}

// fault is the answer f stands for, its rate-limit headers set when it is
// a rate limit.
func (s *Server) fault(f Fault, h http.Header) answer {
	status := f.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	msg := f.Message
	if msg == "" {
		msg = http.StatusText(status)
		if f.Code == "RATELIMITED" {
			msg = "Rate limit exceeded"
		}
	}
	if f.Code == "" {
		return answer{status: status, errs: []gqlError{{Message: msg, Extensions: map[string]any{"type": "internal error"}}}}
	}
	if f.Code == "RATELIMITED" {
		reset := time.Now().Add(f.ResetIn).UnixMilli()
		h.Set("X-RateLimit-Requests-Remaining", "0")
		h.Set("X-RateLimit-Requests-Reset", strconv.FormatInt(reset, 10))
		return fail(status, f.Code, "ratelimited", msg)
	}
	return fail(status, f.Code, strings.ToLower(f.Code), msg)
}

// budgetHeaders sets the X-RateLimit headers of every answer; a rate
// limit's own are left as the fault set them.
func (s *Server) budgetHeaders(h http.Header, limited bool) {
	s.remaining = max(s.remaining-1, 0)
	if s.remaining == 0 {
		s.remaining = requestBudget // the fake's budget never runs out on its own
	}
	reset := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	h.Set("X-RateLimit-Requests-Limit", strconv.Itoa(requestBudget))
	h.Set("X-RateLimit-Complexity-Limit", "3000000")
	h.Set("X-RateLimit-Complexity-Remaining", "2999000")
	h.Set("X-RateLimit-Complexity-Reset", reset)
	if !limited {
		h.Set("X-RateLimit-Requests-Remaining", strconv.Itoa(s.remaining))
		h.Set("X-RateLimit-Requests-Reset", reset)
	}
}

// handler answers one operation from its variables.
type handler struct {
	kind string // query or mutation
	root string // the root field the operation selects
	fn   func(s *Server, vars map[string]any) answer
}

var operations = map[string]handler{
	"CadreIssue":            {"query", "issue", (*Server).opIssue},
	"CadreIssues":           {"query", "issues", (*Server).opIssues},
	"CadreIssueStates":      {"query", "issue", (*Server).opIssueStates},
	"CadreAttachments":      {"query", "issue", (*Server).opAttachments},
	"CadreCommentCreate":    {"mutation", "commentCreate", (*Server).opCommentCreate},
	"CadreIssueUpdate":      {"mutation", "issueUpdate", (*Server).opIssueUpdate},
	"CadreAttachmentCreate": {"mutation", "attachmentCreate", (*Server).opAttachmentCreate},
}

// header matches an operation's definition: its kind and name, its
// variables, and the first field of its selection.
var header = regexp.MustCompile(`^\s*(query|mutation)\s+([A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*\{\s*([A-Za-z_][A-Za-z0-9_]*)`)

// dispatch checks r names an operation the fake knows, defined as such in
// its document, and answers it.
func (s *Server) dispatch(r request) answer {
	if r.OperationName == "" {
		return invalid("Must provide operation name if query contains multiple operations.")
	}
	h, ok := operations[r.OperationName]
	if !ok {
		return invalid(`Unknown operation named "` + r.OperationName + `".`)
	}
	m := header.FindStringSubmatch(r.Query)
	if m == nil || m[1] != h.kind || m[2] != r.OperationName || m[4] != h.root {
		return invalid(`Operation "` + r.OperationName + `" must be a ` + h.kind + " selecting " + h.root)
	}
	if r.Variables == nil {
		r.Variables = map[string]any{}
	}
	return h.fn(s, r.Variables)
}
