package cli_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/gitlab/gitlabtest"
)

// gitlabListenRepo is a gitlabWatchRepo whose gitlab: names the webhook
// secret's variable, with issue 1's merge request open.
func gitlabListenRepo(t *testing.T) *gitlabRepo {
	t.Helper()
	g := gitlabWatchRepo(t, "")
	nameHookSecret(t, g.dir, "gitlab")
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	return g
}

// startGitLabListening starts cadre watch --listen on a free port with
// args, and waits for its first pass; it returns the process and the URL.
func startGitLabListening(t *testing.T, g *gitlabRepo, args ...string) (*cadreProc, string) {
	t.Helper()
	t.Setenv("GITLAB_TOKEN", glCanary)
	return listenIn(t, g.dir, g.work, "gitlab", args...)
}

// jobHook is a Job Hook's body as GitLab sends it when job id of project
// (its id projectID) ends with status on commit sha of branch ref.
func jobHook(projectID, pipelineID, id int64, ref, sha, status string) string {
	const at = "2025-01-14T10:17:02.000Z"
	return fmt.Sprintf(`{"object_kind":"build","type":"Ci::Build","ref":%q,"tag":false,"before_sha":"0000000000000000000000000000000000000000","sha":%q,`+
		`"retries_count":0,"build_id":%d,"build_name":"unit","build_stage":"test","build_status":%q,"build_created_at":%q,"build_started_at":%q,"build_finished_at":%q,`+
		`"build_created_at_iso":%q,"build_started_at_iso":%q,"build_finished_at_iso":%q,"build_duration":41.2,"build_queued_duration":1.9,"build_allow_failure":false,`+
		`"build_failure_reason":"script_failure","pipeline_id":%d,"runner":{"id":380987,"description":"shared-runners","runner_type":"instance_type","active":true,"is_shared":true,"tags":[]},`+
		`"project_id":%d,"project_name":"acme / platform / widget","user":{"id":3,"name":"Alice","username":"alice","avatar_url":null,"email":"[REDACTED]"},`+
		`"commit":{"id":%d,"name":null,"sha":%q,"message":"Fix the frobnicator\n","author_name":"cadre","author_email":"cadre@example.com","author_url":"mailto:cadre@example.com","status":%q,"duration":null,"started_at":%q,"finished_at":null},`+
		`"repository":{"name":"widget","url":"git@gitlab.example.com:acme/platform/widget.git","description":"","homepage":"https://gitlab.example.com/acme/platform/widget",`+
		`"git_http_url":"https://gitlab.example.com/acme/platform/widget.git","git_ssh_url":"git@gitlab.example.com:acme/platform/widget.git","visibility_level":0},`+
		`"project":{"id":%d,"name":"widget","description":"","web_url":"https://gitlab.example.com/acme/platform/widget","avatar_url":null,`+
		`"git_ssh_url":"git@gitlab.example.com:acme/platform/widget.git","git_http_url":"https://gitlab.example.com/acme/platform/widget.git","namespace":"platform",`+
		`"visibility_level":0,"path_with_namespace":%q,"default_branch":"main","ci_config_path":""},"environment":null}`,
		ref, sha, id, status, at, at, at, at, at, at, pipelineID, projectID, pipelineID, sha, status, at, projectID, glProject)
}

// pipelineHook is a Pipeline Hook's body as GitLab sends it when merge
// request mr's pipeline id (on commit sha of branch ref) ends with status.
func pipelineHook(projectID, id int64, mr int, ref, sha, status string) string {
	return fmt.Sprintf(`{"object_kind":"pipeline","object_attributes":{"id":%d,"iid":2,"name":null,"ref":"refs/merge-requests/%d/head","tag":false,"sha":%q,`+
		`"before_sha":"0000000000000000000000000000000000000000","source":"merge_request_event","status":%q,"detailed_status":%q,"stages":["test"],`+
		`"created_at":"2025-01-14 10:16:20 UTC","finished_at":"2025-01-14 10:19:02 UTC","duration":162,"queued_duration":3,"variables":[],`+
		`"url":"https://gitlab.example.com/acme/platform/widget/-/pipelines/%d"},`+
		`"merge_request":{"id":%d,"iid":%d,"title":"Fix the frobnicator","source_branch":%q,"source_project_id":%d,"target_branch":"main","target_project_id":%d,`+
		`"state":"opened","merge_status":"can_be_merged","detailed_merge_status":"ci_still_running","url":"https://gitlab.example.com/acme/platform/widget/-/merge_requests/%d"},`+
		`"user":{"id":3,"name":"Alice","username":"alice","avatar_url":null,"email":"[REDACTED]"},`+
		`"project":{"id":%d,"name":"widget","description":"","web_url":"https://gitlab.example.com/acme/platform/widget","avatar_url":null,`+
		`"git_ssh_url":"git@gitlab.example.com:acme/platform/widget.git","git_http_url":"https://gitlab.example.com/acme/platform/widget.git","namespace":"platform",`+
		`"visibility_level":0,"path_with_namespace":%q,"default_branch":"main","ci_config_path":""},`+
		`"commit":{"id":%q,"message":"Fix the frobnicator\n","title":"Fix the frobnicator","timestamp":"2025-01-14T10:15:59+00:00",`+
		`"url":"https://gitlab.example.com/acme/platform/widget/-/commit/%s","author":{"name":"cadre","email":"cadre@example.com"}},`+
		`"builds":[{"id":78,"stage":"test","name":"unit","status":%q,"created_at":"2025-01-14 10:16:20 UTC","started_at":"2025-01-14 10:17:20 UTC",`+
		`"finished_at":"2025-01-14 10:19:02 UTC","duration":102.1,"queued_duration":1.2,"failure_reason":"script_failure","when":"on_success","manual":false,"allow_failure":false,`+
		`"user":{"id":3,"name":"Alice","username":"alice","avatar_url":null,"email":"[REDACTED]"},"runner":null,"artifacts_file":{"filename":null,"size":null},"environment":null}]}`,
		id, mr, sha, status, status, id, 1000+mr, mr, ref, projectID, projectID, mr, projectID, glProject, sha, sha, status)
}

// glDelivery is a delivery's ids as GitLab sends them: its event's UUID
// and its Idempotency-Key.
type glDelivery struct{ uuid, key string }

// postGitLabHook sends a delivery as GitLab does, with token as its
// X-Gitlab-Token; it returns the answer's status and body.
func postGitLabHook(t testing.TB, url, token, event string, d glDelivery, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitLab/17.8.0")
	req.Header.Set("X-Gitlab-Event", event)
	req.Header.Set("X-Gitlab-Event-UUID", d.uuid)
	req.Header.Set("X-Gitlab-Webhook-UUID", "hook-"+d.uuid)
	req.Header.Set("X-Gitlab-Instance", "https://gitlab.example.com")
	req.Header.Set("Idempotency-Key", d.key)
	req.Header.Set("X-Gitlab-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post the webhook: %v", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}

// A Job Hook with the right token wakes a watch whose interval is an
// hour: the failed job is fixed from its trace and pushed within seconds,
// the watch says it took the delivery, and the delivery is in the item's
// journal. One with another token is answered 401 and changes nothing,
// though the job has failed all along; the same delivery again is
// answered 200 and wakes no pass.
func TestGitLabWatchListenJobHookWakesPass(t *testing.T) {
	t.Setenv("CADRE_HOOK_SECRET", hookSecret)
	g := gitlabListenRepo(t)
	const branch = "cadre/1-fix-the-frobnicator"
	if mrs := g.fake.MRs(glProject); len(mrs) != 1 || mrs[0].Source != branch {
		t.Fatalf("merge requests %+v, want one from %s", mrs, branch)
	}
	head := g.rev(t, branch)
	pipeline := g.fake.SetPipeline(glProject, head, "running", gitlabtest.Job{ID: 77, Name: "unit", Stage: "test", Status: "running"})
	watch, url := startGitLabListening(t, g, "--interval", "1h")
	passes := func() int {
		out, _ := os.ReadFile(watch.log)
		return strings.Count(string(out), "pull request(s) followed")
	}
	if n := len(g.fake.MRs(glProject)); n != 1 {
		t.Fatalf("%d merge requests after the first pass, want 1", n)
	}
	if now := g.rev(t, branch); now != head {
		t.Fatalf("the first pass moved %s from %s to %s while its job ran", branch, head, now)
	}

	// The job fails; GitLab tells of it.
	g.fake.UpdatePipeline(glProject, pipeline, "failed", gitlabtest.Job{ID: 77, Name: "unit", Stage: "test", Status: "failed", Trace: "ok pkg/a\nFAIL pkg/b: want more\n"})
	body := jobHook(g.fake.ProjectID(glProject), pipeline, 77, branch, head, "failed")

	if code, answer := postGitLabHook(t, url, "not the secret", "Job Hook", glDelivery{"0f4e2c1a-bad1-4c3d-9e8f-7a6b5c4d3e2f", "5e6f7a8b-bad1-4d3c-8b2a-1f0e9d8c7b6a"}, body); code != http.StatusUnauthorized {
		t.Errorf("a webhook with a wrong token: %d %q, want 401", code, answer)
	}
	if code, answer := postGitLabHook(t, url, "", "Job Hook", glDelivery{"0f4e2c1a-bad2-4c3d-9e8f-7a6b5c4d3e2f", "5e6f7a8b-bad2-4d3c-8b2a-1f0e9d8c7b6a"}, body); code != http.StatusUnauthorized {
		t.Errorf("a webhook without a token: %d %q, want 401", code, answer)
	}
	time.Sleep(3 * time.Second) // a woken pass would have pushed by now
	out, _ := os.ReadFile(watch.log)
	if now := g.rev(t, branch); now != head || passes() != 1 || strings.Contains(string(out), "webhook ") {
		t.Fatalf("a webhook with a wrong token changed something (%s at %s, want %s):\n%s", branch, now, head, out)
	}

	d := glDelivery{"9b1a4c7e-5f2d-4a8b-b3c6-0d9e8f7a6b5c", "e2d4f6a8-1b3c-4d5e-9f70-8a9b0c1d2e3f"}
	sent := time.Now()
	if code, answer := postGitLabHook(t, url, hookSecret, "Job Hook", d, body); code != http.StatusAccepted || strings.TrimSpace(answer) != "accepted" {
		t.Fatalf("a webhook with the token: %d %q, want 202 accepted", code, answer)
	}
	waitFor(t, 60*time.Second, "the fix pushed", func() bool { return g.rev(t, branch) != head })
	t.Logf("webhook to fix pushed: %s", time.Since(sent).Round(time.Millisecond))
	if parent := g.rev(t, branch+"^"); parent != head {
		t.Fatalf("after the failed job %s's parent is %s, want one commit on %s", branch, parent, head)
	}
	ctx, _ := os.ReadFile(latestContext(t, g.dir, "ci_failed-1-fix-surgeon"))
	for _, want := range []string{`"kind":"ci_failed"`, "FAIL pkg/b: want more", `"name":"unit"`} {
		if !strings.Contains(string(ctx), want) {
			t.Errorf("fix-surgeon's context lacks %s:\n%s", want, ctx)
		}
	}
	out, _ = os.ReadFile(watch.log)
	if want := "cadre: watch: webhook job failed at " + head[:12] + " (delivery "; !strings.Contains(string(out), want) {
		t.Errorf("the watch did not say it took the webhook (%q):\n%s", want, out)
	}

	// The same delivery again: the same event UUID and Idempotency-Key.
	// The woken pass reacted, so one more follows it at once.
	waitFor(t, 60*time.Second, "the woken pass and the one following it up ended", func() bool { return passes() == 3 })
	fixed := g.rev(t, branch)
	if code, answer := postGitLabHook(t, url, hookSecret, "Job Hook", d, body); code != http.StatusOK || strings.TrimSpace(answer) != "seen before" {
		t.Errorf("the same delivery again: %d %q, want 200 seen before", code, answer)
	}
	time.Sleep(3 * time.Second) // a woken pass would have ended by now
	out, _ = os.ReadFile(watch.log)
	if n := passes(); n != 3 || strings.Count(string(out), "cadre: watch: webhook ") != 1 || g.rev(t, branch) != fixed {
		t.Errorf("the same delivery again was acted on (%d passes, want 3):\n%s", n, out)
	}
	// A resend from GitLab's settings: a new event UUID, the same
	// Idempotency-Key.
	resent := glDelivery{uuid: "resent-" + d.uuid, key: d.key}
	if code, answer := postGitLabHook(t, url, hookSecret, "Job Hook", resent, body); code != http.StatusOK || strings.TrimSpace(answer) != "seen before" {
		t.Errorf("a resend: %d %q, want 200 seen before", code, answer)
	}

	stopWatching(t, g, watch)
	if !journaled(t, g.dir, "gitlab job failed at "+head[:12]+" (delivery ") {
		t.Error("the delivery is not in the item's journal")
	}
	out, _ = os.ReadFile(watch.log)
	g.noCanary(t, string(out))
}

// A job re-run on a head the watch saw green moves no update time of the
// merge request: the Pipeline Hook naming the merge request makes the
// woken pass ask about it again, and the failure is fixed within seconds,
// not at the reconcile.
func TestGitLabWatchListenPipelineHookRerunFailure(t *testing.T) {
	t.Setenv("CADRE_HOOK_SECRET", hookSecret)
	g := gitlabListenRepo(t)
	const branch = "cadre/1-fix-the-frobnicator"
	mr := g.fake.MRs(glProject)[0].IID
	head := g.rev(t, branch)
	pipeline := g.fake.SetPipeline(glProject, head, "success", gitlabtest.Job{ID: 78, Name: "unit", Stage: "test", Status: "success"})
	watch, url := startGitLabListening(t, g, "--interval", "1h")
	g.fake.UpdatePipeline(glProject, pipeline, "failed", gitlabtest.Job{ID: 78, Name: "unit", Stage: "test", Status: "failed", Trace: "FAIL pkg/c: a race\n"})
	d := glDelivery{"3c7d9f10-8e2a-4b6c-a1d4-5f6e7a8b9c0d", "7b8c9d0e-1f2a-4b3c-8d4e-5f6a7b8c9d0e"}
	body := pipelineHook(g.fake.ProjectID(glProject), pipeline, mr, branch, head, "failed")
	if code, answer := postGitLabHook(t, url, hookSecret, "Pipeline Hook", d, body); code != http.StatusAccepted || strings.TrimSpace(answer) != "accepted" {
		t.Fatalf("a webhook with the token: %d %q, want 202 accepted", code, answer)
	}
	waitFor(t, 30*time.Second, "the re-run's failure fixed and pushed", func() bool { return g.rev(t, branch) != head })
	if parent := g.rev(t, branch+"^"); parent != head {
		t.Fatalf("after the re-run failed %s's parent is %s, want one commit on %s", branch, parent, head)
	}
	out, _ := os.ReadFile(watch.log)
	want := fmt.Sprintf("pipeline failed #%d at %s (delivery ", mr, head[:12])
	if !strings.Contains(string(out), "cadre: watch: webhook "+want) {
		t.Errorf("the watch did not say it took the webhook (%q):\n%s", want, out)
	}
	stopWatching(t, g, watch)
	if !journaled(t, g.dir, "gitlab "+want) {
		t.Error("the delivery is not in the item's journal")
	}
}
