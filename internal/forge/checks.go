package forge

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/cadre-dev/cadre/internal/webhook"
)

// Check is a check run or commit status of a commit that did not pass.
// Its texts come from CI output: untrusted.
type Check struct {
	Name       string // the check run's name, or the status's context
	Conclusion string // a check run's (failure, timed_out…), or a status's state (failure, error)
	Summary    string // the run's output title and summary, or the status's description
	URL        string // details_url, or the status's target_url
	JobID      int64  // the GitHub Actions job the run is, 0 for any other
	// Text is the run's output.text, its last textLines lines: where
	// CI apps other than Actions put their details.
	Text string
}

// textLines is how many of a check run's output.text last lines are kept.
const textLines = 200

// Checks is what a commit's checks say of it.
type Checks struct {
	Failed  []Check  // check runs and statuses that failed
	Pending []string // names of those not finished yet
	Passed  int      // how many passed (success, neutral, skipped)
	// Succeeded names those that passed.
	Succeeded []string
}

// Green reports whether every check finished and none failed; a commit
// without checks is green.
func (c Checks) Green() bool { return len(c.Failed) == 0 && len(c.Pending) == 0 }

// failedConclusions are the check run conclusions that keep a commit from
// being green: GitHub's merge box counts cancelled and stale runs as not
// passing too.
var failedConclusions = []string{"failure", "timed_out", "cancelled", "action_required", "startup_failure", "stale"}

// actionsApp is the slug of the GitHub app behind Actions: its check runs
// are jobs, each with the job's id.
const actionsApp = "github-actions"

type apiCheckRun struct {
	ID         int64   `json:"id"`
	Name       string  `json:"name"`
	Status     string  `json:"status"`
	Conclusion *string `json:"conclusion"`
	DetailsURL string  `json:"details_url"`
	Output     struct {
		Title   *string `json:"title"`
		Summary *string `json:"summary"`
		Text    *string `json:"text"`
	} `json:"output"`
	App *struct {
		Slug string `json:"slug"`
	} `json:"app"`
}

type apiStatus struct {
	Context     string  `json:"context"`
	State       string  `json:"state"`
	Description *string `json:"description"`
	TargetURL   *string `json:"target_url"`
}

// FailedChecks reads the check runs (the latest of each name) and commit
// statuses (the latest of each context) of commit sha: which failed,
// which are still running, how many passed.
func (c *Client) FailedChecks(ctx context.Context, owner, repo, sha string) (Checks, error) {
	op := fmt.Sprintf("read checks of %s/%s@%s", owner, repo, sha)
	if err := checkRepo(owner, repo); err != nil {
		return Checks{}, fmt.Errorf("github: %s: %w", op, err)
	}
	if err := checkRef(sha); err != nil {
		return Checks{}, fmt.Errorf("github: %s: %w", op, err)
	}
	var out Checks
	path := fmt.Sprintf("%s/commits/%s/check-runs", repoPath(owner, repo), sha)
	err := pages(ctx, c, op, path, url.Values{"filter": {"latest"}, "per_page": {"100"}}, func(page struct {
		CheckRuns []apiCheckRun `json:"check_runs"`
	}) bool {
		for _, cr := range page.CheckRuns {
			out.add(cr)
		}
		return len(page.CheckRuns) > 0
	})
	if err != nil {
		return Checks{}, err
	}
	path = fmt.Sprintf("%s/commits/%s/status", repoPath(owner, repo), sha)
	// The combined state is "pending" when there are no statuses at all;
	// only the statuses themselves tell.
	err = pages(ctx, c, op, path, url.Values{"per_page": {"100"}}, func(page struct {
		Statuses []apiStatus `json:"statuses"`
	}) bool {
		for _, st := range page.Statuses {
			out.addStatus(st)
		}
		return len(page.Statuses) > 0
	})
	if err != nil {
		return Checks{}, err
	}
	for i := range out.Failed {
		// CI output may echo a secret; it is shown and posted.
		out.Failed[i].Text = c.scrub(out.Failed[i].Text)
	}
	return out, nil
}

func (c *Checks) add(cr apiCheckRun) {
	conclusion := deref(cr.Conclusion)
	switch {
	case cr.Status != "completed":
		c.Pending = append(c.Pending, cr.Name)
	case slices.Contains(failedConclusions, conclusion):
		ch := Check{Name: cr.Name, Conclusion: conclusion, URL: cr.DetailsURL,
			Summary: joinText(deref(cr.Output.Title), deref(cr.Output.Summary))}
		if t := deref(cr.Output.Text); t != "" {
			ch.Text, _ = lastLines(strings.NewReader(t), textLines)
		}
		if cr.App != nil && cr.App.Slug == actionsApp {
			ch.JobID = cr.ID
		}
		c.Failed = append(c.Failed, ch)
	default:
		c.Passed++
		c.Succeeded = append(c.Succeeded, cr.Name)
	}
}

func (c *Checks) addStatus(st apiStatus) {
	switch st.State {
	case "failure", "error":
		c.Failed = append(c.Failed, Check{Name: st.Context, Conclusion: st.State, Summary: deref(st.Description), URL: deref(st.TargetURL)})
	case "pending":
		c.Pending = append(c.Pending, st.Context)
	default:
		c.Passed++
		c.Succeeded = append(c.Succeeded, st.Context)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// joinText joins the texts that are not empty, a blank line apart.
func joinText(texts ...string) string {
	var out []string
	for _, t := range texts {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n\n")
}

// refRE is a commit's sha or a branch name of the usual characters: it
// goes into a URL path as it is.
var refRE = regexp.MustCompile(`^[A-Za-z0-9._/-]{1,255}$`)

// checkRef refuses a commit or branch name that is empty or could change
// the URL it goes into.
func checkRef(ref string) error {
	if ref == "" {
		return errors.New("commit is empty")
	}
	if !refRE.MatchString(ref) || strings.Contains(ref, "..") || strings.HasPrefix(ref, "/") {
		return fmt.Errorf("commit %q is not a sha or a branch name of letters, digits, '.', '/', '-' and '_'", ref)
	}
	return nil
}

// maxLogLine caps one line of a log tail: a line of minified output or a
// progress bar can be megabytes long.
const maxLogLine = 4096

// JobLogTail fetches the log of GitHub Actions job jobID and returns the
// last lines of it, as many as lines says. GitHub answers with a redirect to a short-lived
// signed link, off the API host: it is fetched without the token, which
// it does not need. The log is read as it streams and only its tail is
// kept; a longer line keeps its first maxLogLine bytes. The Client's
// secrets are masked in it, as the tail may be shown or posted.
func (c *Client) JobLogTail(ctx context.Context, owner, repo string, jobID int64, lines int) (string, error) {
	op := fmt.Sprintf("read log of job %d in %s/%s", jobID, owner, repo)
	if err := checkRepo(owner, repo); err != nil {
		return "", fmt.Errorf("github: %s: %w", op, err)
	}
	if jobID <= 0 || lines <= 0 {
		return "", fmt.Errorf("github: %s: job id and line count must be positive", op)
	}
	path := fmt.Sprintf("%s/actions/jobs/%d/logs", repoPath(owner, repo), jobID)
	hdr, err := c.do(ctx, call{op: op, method: http.MethodGet, path: path, redirect: true, resend: true})
	if err != nil {
		return "", err
	}
	link, err := c.base.Parse(hdr.Get("Location"))
	if err != nil || hdr.Get("Location") == "" {
		return "", fmt.Errorf("github: %s: the answer holds no download link", op)
	}
	if link.Scheme != "https" && link.Scheme != c.base.Scheme {
		return "", fmt.Errorf("github: %s: download link is not https", op)
	}
	tail, err := c.download(ctx, op, link, func(r io.Reader) (string, error) { return lastLines(r, lines) })
	if err != nil {
		return "", err
	}
	return c.scrub(tail), nil
}

// download fetches a signed link: without the token, following its
// redirects anywhere (nothing secret goes with them), retrying as a read
// may. read consumes the answer's body.
func (c *Client) download(ctx context.Context, op string, link *url.URL, read func(io.Reader) (string, error)) (string, error) {
	hc := *c.hc
	hc.CheckRedirect = nil // at most 10 redirects, net/http's default
	for attempt := 0; ; attempt++ {
		out, status, err := c.fetch(ctx, &hc, link, read)
		switch {
		case err == nil && status == http.StatusOK:
			return out, nil
		case ctx.Err() != nil:
			return "", fmt.Errorf("github: %s: %w", op, ctx.Err())
		case (err != nil || status >= 500) && attempt < c.retries:
			if err := c.pause(ctx, op, backoff(attempt)); err != nil {
				return "", err
			}
		case err != nil:
			return "", fmt.Errorf("github: %s: download: %s", op, oneLine(c.scrub(err.Error())))
		default:
			return "", fmt.Errorf("github: %s: download: %d %s", op, status, http.StatusText(status))
		}
	}
}

func (c *Client) fetch(ctx context.Context, hc *http.Client, link *url.URL, read func(io.Reader) (string, error)) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, link.String(), nil)
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := hc.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", resp.StatusCode, nil
	}
	out, err := read(resp.Body)
	return out, resp.StatusCode, err
}

// lastLines reads r to its end and returns its last n lines, each cut to
// maxLogLine bytes, without their line ends or the byte-order mark GitHub
// starts a log with.
func lastLines(r io.Reader, n int) (string, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	ring := make([]string, n)
	count := 0
	var line []byte
	cut := false
	for {
		chunk, err := br.ReadSlice('\n')
		if room := maxLogLine - len(line); len(chunk) > room {
			chunk, cut = chunk[:room], true
		}
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(line) > 0 || cut {
			text := strings.TrimRight(string(line), "\r\n")
			if count == 0 {
				text = strings.TrimPrefix(text, "\ufeff")
			}
			if cut {
				text = strings.ToValidUTF8(text, "") + " …"
			}
			ring[count%n] = text
			count++
		}
		line, cut = line[:0], false
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	var b bytes.Buffer
	for i := max(count-n, 0); i < count; i++ {
		if i > max(count-n, 0) {
			b.WriteByte('\n')
		}
		b.WriteString(ring[i%n])
	}
	return b.String(), nil
}

// ReadDelivered reads a check run, or a commit status (status), as a
// webhook delivered it, as FailedChecks reads the API's answer: one of
// Failed, Pending or Succeeded, its output text cut alike. Its texts are
// not masked: the caller masks what it knows.
func ReadDelivered(c webhook.Check, status bool) Checks {
	var out Checks
	if status {
		out.addStatus(apiStatus{Context: c.Name, State: c.Status, Description: &c.Title, TargetURL: &c.URL})
		return out
	}
	cr := apiCheckRun{ID: c.ID, Name: c.Name, Status: c.Status, Conclusion: &c.Conclusion, DetailsURL: c.URL}
	cr.Output.Title, cr.Output.Summary, cr.Output.Text = &c.Title, &c.Summary, &c.Text
	if c.App != "" {
		cr.App = &struct {
			Slug string `json:"slug"`
		}{c.App}
	}
	out.add(cr)
	return out
}
