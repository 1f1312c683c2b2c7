package gitlab

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	gl "gitlab.com/gitlab-org/api/client-go/v2"
)

// HeadPipeline reads the newest pipeline of merge request mrIID whose
// commit is sha (the project's newest for sha when mrIID is 0 or the merge
// request has none: a branch pipeline), and its jobs, the latest attempt
// of each: which failed, how many are still to finish, how many passed.
// Status is "" when sha has no pipeline.
func (c *Client) HeadPipeline(ctx context.Context, project string, mrIID int, sha string) (Pipeline, error) {
	op := fmt.Sprintf("pipeline of %s in %s", sha, project)
	if err := CheckProject(project); err != nil {
		return Pipeline{}, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	if !shaRE.MatchString(sha) {
		return Pipeline{}, fmt.Errorf("gitlab: %s: head must be a full commit id", op)
	}
	p, err := c.headPipeline(ctx, op, project, mrIID, sha)
	if err != nil || p == nil {
		return Pipeline{}, err
	}
	out := Pipeline{ID: p.ID, Status: p.Status}
	err = pages(ctx, c, op, func(lo gl.ListOptions, ro ...gl.RequestOptionFunc) ([]*gl.Job, *gl.Response, error) {
		return c.api.Jobs.ListPipelineJobs(project, p.ID, &gl.ListJobsOptions{ListOptions: lo}, ro...)
	}, func(j *gl.Job) bool {
		out.count(j)
		return true
	})
	if err != nil {
		return Pipeline{}, err
	}
	return out, nil
}

// headPipeline finds the newest pipeline of sha: the merge request's
// (merge request pipelines run there), else the project's.
func (c *Client) headPipeline(ctx context.Context, op, project string, mrIID int, sha string) (*gl.PipelineInfo, error) {
	if mrIID > 0 {
		list, _, err := c.api.MergeRequests.ListMergeRequestPipelines(project, int64(mrIID), gl.WithContext(ctx))
		if err != nil {
			return nil, c.fail(op, err)
		}
		if p := newest(list, sha); p != nil {
			return p, nil
		}
	}
	opt := &gl.ListProjectPipelinesOptions{SHA: gl.Ptr(sha), OrderBy: gl.Ptr("id"), Sort: gl.Ptr("desc"), ListOptions: gl.ListOptions{PerPage: 20}}
	list, _, err := c.api.Pipelines.ListProjectPipelines(project, opt, gl.WithContext(ctx))
	if err != nil {
		return nil, c.fail(op, err)
	}
	return newest(list, sha), nil
}

func newest(list []*gl.PipelineInfo, sha string) *gl.PipelineInfo {
	var best *gl.PipelineInfo
	for _, p := range list {
		if p.SHA == sha && (best == nil || p.ID > best.ID) {
			best = p
		}
	}
	return best
}

// count files job j under what keeps the head from passing, what is still
// to come, or what passed. A manual job waiting for a person does not
// block (GitLab's own pipeline status treats it so unless it is marked
// blocking, which then shows as the pipeline's "manual" status).
func (p *Pipeline) count(j *gl.Job) {
	switch j.Status {
	case "failed", "canceled", "canceling":
		if j.AllowFailure {
			p.Passed++
			return
		}
		p.Failed = append(p.Failed, Job{ID: j.ID, Name: j.Name, Stage: j.Stage, Status: j.Status, URL: j.WebURL, AllowFailure: j.AllowFailure})
	case "success", "skipped", "manual":
		p.Passed++
		if j.Status == "success" {
			p.Succeeded = append(p.Succeeded, j.Name)
		}
	default: // created, pending, running, preparing, scheduled, waiting_for_resource
		p.Pending++
	}
}

// maxTrace caps how much of a job's log is read: its tail is what tells.
const maxTrace = 4 << 20

// JobTraceTail returns the last lines lines of job's log, its colours and
// GitLab's section markers taken out.
func (c *Client) JobTraceTail(ctx context.Context, project string, job int64, lines int) (string, error) {
	op := fmt.Sprintf("log of job %d of %s", job, project)
	if err := CheckProject(project); err != nil {
		return "", fmt.Errorf("gitlab: %s: %w", op, err)
	}
	if lines <= 0 {
		return "", nil
	}
	req, err := c.api.NewRequest(http.MethodGet, fmt.Sprintf("projects/%s/jobs/%d/trace", gl.PathEscape(project), job), nil,
		[]gl.RequestOptionFunc{gl.WithContext(ctx)})
	if err != nil {
		return "", c.fail(op, err)
	}
	tail := &tailBuffer{max: maxTrace}
	if _, err := c.api.Do(req, tail); err != nil {
		return "", c.fail(op, err)
	}
	return lastLines(plain(tail.buf.String()), lines), nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.max {
		p = p[len(p)-t.max:]
	}
	if over := t.buf.Len() + len(p) - t.max; over > 0 {
		t.buf.Next(over)
	}
	t.buf.Write(p)
	return n, nil
}

var (
	// ansiRE is a terminal escape: colours, erase-line.
	ansiRE = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)
	// sectionRE is GitLab's collapsible-section marker.
	sectionRE = regexp.MustCompile(`section_(?:start|end):[0-9]+:[A-Za-z0-9_.-]+(?:\[[^\]]*\])?\r?`)
)

// plain takes a log's escapes out; of a line redrawn with '\r' (a progress
// bar) only its last drawing stays.
func plain(s string) string {
	s = sectionRE.ReplaceAllString(ansiRE.ReplaceAllString(s, ""), "")
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		l = strings.TrimRight(l, "\r")
		if j := strings.LastIndex(l, "\r"); j >= 0 {
			l = l[j+1:]
		}
		ls[i] = l
	}
	return strings.Join(ls, "\n")
}

func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}
