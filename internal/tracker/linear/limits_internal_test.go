package linear

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/tracker/linear/lineartest"
)

const testToken = "lin_api_internal0123456789abcdefghijklmnop"

// sleeper records the waits a client asks for instead of waiting.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func fakeClient(t *testing.T) (*Client, *lineartest.Server, *sleeper) {
	t.Helper()
	s := lineartest.New(t, testToken)
	s.AddTeam("ENG")
	s.AddIssue(lineartest.Issue{Identifier: "ENG-1", Title: "t"})
	c, err := New(Options{URL: s.URL, Token: testToken, Team: "ENG"})
	if err != nil {
		t.Fatal(err)
	}
	sl := &sleeper{}
	// Time stands still: a wait is recorded and over at once.
	now := time.Now()
	c.sleep, c.now = sl.sleep, func() time.Time { return now }
	return c, s, sl
}

func TestRateLimitedWaitsForReset(t *testing.T) {
	for _, status := range []int{http.StatusBadRequest, http.StatusTooManyRequests} {
		c, s, sl := fakeClient(t)
		s.Fail(1, lineartest.Fault{Status: status, Code: codeRateLimited, ResetIn: 5 * time.Second})
		if _, err := c.Issue(context.Background(), "ENG-1"); err != nil {
			t.Fatalf("%d: %v", status, err)
		}
		if len(sl.waits) != 1 || sl.waits[0] < 3*time.Second || sl.waits[0] > 6*time.Second {
			t.Fatalf("%d: waits %v, want one of about 5s", status, sl.waits)
		}
		if n := len(s.Calls()); n != 2 {
			t.Fatalf("%d: %d requests, want 2", status, n)
		}
	}
}

func TestRateLimitedMutationSentAgain(t *testing.T) {
	c, s, sl := fakeClient(t)
	s.Fail(2, lineartest.Fault{Code: codeRateLimited, ResetIn: 2 * time.Second})
	if err := c.Move(context.Background(), "ENG-1", "Done"); err != nil {
		t.Fatal(err)
	}
	if s.Issue("ENG-1").State != "Done" || s.Count("CadreIssueUpdate") != 2 || len(sl.waits) != 1 {
		t.Fatalf("state %s after %d updates, waits %v", s.Issue("ENG-1").State, s.Count("CadreIssueUpdate"), sl.waits)
	}
}

func TestRateLimitLongerThanMaxWaitFails(t *testing.T) {
	c, s, sl := fakeClient(t)
	c.maxWait = 10 * time.Second
	s.Fail(1, lineartest.Fault{Code: codeRateLimited, ResetIn: 10 * time.Minute})
	_, err := c.Issue(context.Background(), "ENG-1")
	if !IsRateLimited(err) || len(sl.waits) != 0 || len(s.Calls()) != 1 {
		t.Fatalf("err %v, waits %v, %d calls", err, sl.waits, len(s.Calls()))
	}
	// The limit holds later calls back, unsent, until it resets.
	if _, err := c.Issue(context.Background(), "ENG-1"); !IsRateLimited(err) || len(s.Calls()) != 1 {
		t.Fatalf("second call: %v, %d calls", err, len(s.Calls()))
	}
}

func TestRateLimitRetriesBounded(t *testing.T) {
	c, s, _ := fakeClient(t)
	for i := 1; i <= DefaultRetries+1; i++ {
		s.Fail(i, lineartest.Fault{Code: codeRateLimited, ResetIn: time.Second})
	}
	if _, err := c.Issue(context.Background(), "ENG-1"); !IsRateLimited(err) {
		t.Fatalf("err %v", err)
	}
	if n := len(s.Calls()); n != DefaultRetries+1 {
		t.Fatalf("%d requests, want %d", n, DefaultRetries+1)
	}
}

func TestQueryRetriedAfterServerError(t *testing.T) {
	c, s, sl := fakeClient(t)
	s.Fail(1, lineartest.Fault{Status: http.StatusBadGateway})
	if _, err := c.Issue(context.Background(), "ENG-1"); err != nil {
		t.Fatal(err)
	}
	if len(s.Calls()) != 2 || len(sl.waits) != 1 {
		t.Fatalf("%d calls, waits %v", len(s.Calls()), sl.waits)
	}
}

func TestCommentIDIsAVersion4UUID(t *testing.T) {
	id := commentID("00000000-0000-4000-8000-000000000001", "`cadre:m`")
	if len(id) != 36 || id[14] != '4' || (id[19] != '8' && id[19] != '9' && id[19] != 'a' && id[19] != 'b') {
		t.Fatalf("id %s", id)
	}
	if id == commentID("00000000-0000-4000-8000-000000000001", "`cadre:n`") {
		t.Fatal("two markers, one id")
	}
}
