package intake

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/store"
)

// Where an item came from, as journaled (store.Item.Source).
const (
	SourceTask   = "task"   // a task file of the repository
	SourcePrompt = "prompt" // cadre do's prompt
	SourceGitHub = "github" // an issue of the code host
)

// errNoForge is returned for issue targets when no code host is configured.
var errNoForge = errors.New("issue targets need access to the code host: set GITHUB_TOKEN (or github.token_env) or log in with gh; on GitLab, GITLAB_TOKEN (or gitlab.token_env)")

// An issue reference: 42, #42, owner/repo#42, group/sub/project#42, or an
// issue's URL (GitHub's /issues/N, GitLab's /-/issues/N and /-/work_items/N).
var issueRefRE = regexp.MustCompile(`^(?:[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+)?#?[0-9]+$|^https?://\S+/(?:issues|work_items)/[0-9]+$`)

// A tracker's issue: a Jira key or Linear identifier (PROJ-123, ENG-42),
// or its URL (Jira's /browse/KEY or ?selectedIssue=KEY, Linear's
// /issue/KEY/...).
var trackerRefRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*-[0-9]+$|^https?://\S+(?:/browse/|[?&]selectedIssue=|/issue/)[A-Z][A-Z0-9_]*-[0-9]+(?:[/?#]\S*)?$`)

// IsIssueRef says whether a run target names an issue rather than a file.
func IsIssueRef(s string) bool { return issueRefRE.MatchString(s) || trackerRefRE.MatchString(s) }

// IsTrackerRef says whether a run target names a tracker's issue.
func IsTrackerRef(s string) bool { return trackerRefRE.MatchString(s) }

// issueRecord is the record of an issue item beside its task file
// (items/<id>/issue.json).
type issueRecord struct {
	Issue codehost.Issue `json:"issue"`
	PR    string         `json:"pr,omitempty"`
}

// issueRecordName is the file name of an issue item's record.
const issueRecordName = "issue.json"

// IssueTask turns an issue into a task file under the run's state, so the
// same machinery (frontmatter board, review, workflows) drives it. The file
// is cadre's own, never in the repository; the issue text stays untrusted
// and is given to agents fenced as data.
func (l *Loader) IssueTask(run string, is codehost.Issue) (*taskfile.Task, error) {
	id := IssueItemID(l.Config.Repository, is)
	front := fmt.Sprintf("source: github\nissue: %d\nrepository: %s\n", is.Number, is.Repo)
	if is.Key != "" {
		front = fmt.Sprintf("source: %s\nissue: %s\n", l.Config.Tracker.Type, is.Key)
	}
	path, err := l.generatedTask(run, id, front, oneLine(is.Title, 200), is.Body)
	if err != nil {
		return nil, err
	}
	meta, _ := json.MarshalIndent(issueRecord{Issue: is}, "", "  ")
	if err := safefile.Replace(filepath.Join(filepath.Dir(path), issueRecordName), meta); err != nil {
		return nil, err
	}
	return taskfile.Load(path)
}

// IssueItemID is the id of issue is's item in a repository whose
// cadre.yaml names repo: the bare number for its own issues.
func IssueItemID(repo string, is codehost.Issue) string {
	if is.Key != "" {
		return strings.ToLower(is.Key) // a tracker's key is an item id already
	}
	if repo == "" || strings.EqualFold(is.Repo, repo) {
		return fmt.Sprint(is.Number)
	}
	return strings.NewReplacer("/", "-", "#", "-").Replace(is.Repo) + "-" + fmt.Sprint(is.Number)
}

// PromptTask turns cadre do's prompt into a task file under the run's
// state, like an issue: the item id is "do-" and a short hash of the prompt.
func (l *Loader) PromptTask(run, prompt string) (*taskfile.Task, error) {
	sum := sha256.Sum256([]byte(prompt))
	id := "do-" + hex.EncodeToString(sum[:3]) // the branch name adds the prompt's slug
	path, err := l.generatedTask(run, id, "source: prompt\n", PromptTitle(prompt), prompt)
	if err != nil {
		return nil, err
	}
	return taskfile.Load(path)
}

// PromptTitle is the title of cadre do's item: its prompt on one short line.
func PromptTitle(prompt string) string { return oneLine(prompt, 72) }

// generatedTask writes the task file of an item that has none in the
// repository (an issue, a prompt) under the run's state; the file stem is
// the item id, and its workflow is defaults.workflow.
func (l *Loader) generatedTask(run, id, frontmatter, title, body string) (string, error) {
	dir := filepath.Join(l.StateDir, "runs", run, "items", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	text := fmt.Sprintf("---\nstage: code\nworkflow: %s\n%s---\n# %s\n\n%s\n", l.Config.Defaults.Workflow, frontmatter, title, body)
	path := filepath.Join(dir, id+".md")
	return path, safefile.Replace(path, []byte(text))
}

// Source says where task t came from: a task file of the repository, or a
// prompt or an issue given a task file under the state directory.
func (l *Loader) Source(t *taskfile.Task) string {
	if !strings.HasPrefix(t.Path, l.StateDir) {
		return SourceTask
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(t.Path), issueRecordName)); err == nil {
		return SourceGitHub
	}
	return SourcePrompt
}

// IssueOf reads an issue item's record, when the item came from an issue.
func IssueOf(it store.Item) (codehost.Issue, bool) {
	if it.Source != SourceGitHub {
		return codehost.Issue{}, false
	}
	dir := filepath.Dir(it.Ref)
	data, err := safefile.ReadFile(dir, filepath.Join(dir, issueRecordName))
	if err != nil {
		return codehost.Issue{}, false
	}
	var r issueRecord
	if json.Unmarshal(data, &r) != nil {
		return codehost.Issue{}, false
	}
	return r.Issue, true
}

// Refuse says why an issue may not be worked on, given the configured
// author allow-list and required label; "" when it may.
func (l *Loader) Refuse(is codehost.Issue) string {
	gh, key := l.Config.Host(), l.Config.HostKey()
	if len(gh.Authors) > 0 && !authorIn(gh.Authors, is.Author) {
		return fmt.Sprintf("author %q is not in %s.authors", is.Author, key)
	}
	if gh.RequireLabel != "" {
		for _, l := range is.Labels {
			if strings.EqualFold(l, gh.RequireLabel) {
				return ""
			}
		}
		return fmt.Sprintf("it lacks the label %q that %s.require_label asks for", gh.RequireLabel, key)
	}
	return ""
}

// Stranger says whether item it came from a stranger: an issue whose
// author authors (github.authors) does not name, or whose record cannot
// be read. Its tree then keeps no configuration that runs programs
// unless sandbox.trust_repo says so.
func Stranger(it store.Item, authors []string) bool {
	if it.Source != SourceGitHub {
		return false
	}
	is, ok := IssueOf(it)
	return !ok || is.Author == "" || !authorIn(authors, is.Author)
}

// authorIn says whether authors names author, in any case.
func authorIn(authors []string, author string) bool {
	for _, a := range authors {
		if strings.EqualFold(a, author) {
			return true
		}
	}
	return false
}

// oneLine puts untrusted or long text on one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}
