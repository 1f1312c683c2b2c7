package gitlab

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/gitlab/gitlabtest"
)

const testToken = "glpat-internal-0123456789abcdef"

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

func fakeClient(t *testing.T) (*Client, *gitlabtest.Server, *sleeper) {
	t.Helper()
	s := gitlabtest.New(t, testToken)
	s.AddProject("acme/widget")
	c, err := New(s.URL+"/api/v4", testToken)
	if err != nil {
		t.Fatal(err)
	}
	sl := &sleeper{}
	// Time stands still: a wait is recorded and over at once.
	now := time.Now()
	c.wire.sleep, c.wire.now = sl.sleep, func() time.Time { return now }
	return c, s, sl
}

func TestRetryAfterHonoured(t *testing.T) {
	c, s, sl := fakeClient(t)
	iid := s.AddMR("acme/widget", gitlabtest.MR{Title: "t", Source: "b", Target: "main"})
	s.Fail(1, gitlabtest.Fault{Status: http.StatusTooManyRequests, RetryAfter: 7})
	if _, err := c.MR(context.Background(), "acme/widget", iid); err != nil {
		t.Fatal(err)
	}
	// RateLimit-Reset, when the answer gives one, may hold a second more.
	if len(sl.waits) != 1 || sl.waits[0] < 7*time.Second || sl.waits[0] > 9*time.Second {
		t.Fatalf("waits %v, want [7s]", sl.waits)
	}
	if n := s.Counts().Requests; n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

func TestLongRateLimitFailsAtOnce(t *testing.T) {
	c, s, sl := fakeClient(t)
	s.Fail(1, gitlabtest.Fault{Status: http.StatusTooManyRequests, RetryAfter: 3600})
	_, err := c.MR(context.Background(), "acme/widget", 1)
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusTooManyRequests || e.RetryAfter != time.Hour {
		t.Fatalf("err = %v, want a 429 asking for an hour", err)
	}
	if len(sl.waits) != 0 {
		t.Fatalf("waited %v", sl.waits)
	}
	// The limit holds the next call back too, without sending it.
	if _, err := c.MR(context.Background(), "acme/widget", 1); !errors.As(err, &e) || e.RetryAfter == 0 {
		t.Fatalf("next call: %v", err)
	}
	if n := s.Counts().Requests; n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

func TestWritesPacedWhenBudgetLow(t *testing.T) {
	c, s, sl := fakeClient(t)
	c.wire.writeGap = 2 * time.Second
	s.SetRateLimit(2000, 50)
	iid := s.AddIssue("acme/widget", gitlabtest.Issue{Title: "t"})
	ctx := context.Background()
	for _, m := range []string{"a", "b"} {
		if err := c.EnsureIssueNote(ctx, "acme/widget", iid, m, "x"); err != nil {
			t.Fatal(err)
		}
	}
	// Time stands still, so the second write waits the whole gap.
	if len(sl.waits) != 1 || sl.waits[0] != 2*time.Second {
		t.Fatalf("waits %v, want [2s]", sl.waits)
	}
}

func TestCAFile(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"iid":3,"state":"opened","title":"self-managed"}`))
	}))
	certPEM, cert := selfSigned(t)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	base := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/api/v4"
	if c, err := New(base, testToken); err != nil {
		t.Fatal(err)
	} else if _, err := c.MR(context.Background(), "a/b", 3); err == nil {
		t.Fatal("an unknown authority was trusted")
	} else if n := calls.Load(); n != 0 {
		t.Fatalf("%d requests served with an unknown authority", n)
	}
	c, err := New(base, testToken, WithCAFile(ca))
	if err != nil {
		t.Fatal(err)
	}
	if mr, err := c.MR(context.Background(), "a/b", 3); err != nil || mr.Title != "self-managed" {
		t.Fatalf("MR = %+v, %v", mr, err)
	}
	bad := filepath.Join(dir, "bad.pem")
	_ = os.WriteFile(bad, []byte("not a certificate"), 0o600)
	for _, p := range []string{bad, filepath.Join(dir, "missing.pem")} {
		if _, err := New(base, testToken, WithCAFile(p)); err == nil || !strings.Contains(err.Error(), "gitlab.ca_file") {
			t.Errorf("WithCAFile(%s): %v", p, err)
		}
	}
}

// selfSigned makes a certificate for localhost and 127.0.0.1.
func selfSigned(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "git.corp test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
