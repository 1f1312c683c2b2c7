package cabundle

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A server whose certificate only the bundle's CA signed is reached with
// the bundle, and refused without it.
func TestTransportTrustsTheBundle(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	dir := t.TempDir()
	bundle := filepath.Join(dir, "ca.pem")
	os.WriteFile(bundle, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)

	if _, err := (&http.Client{}).Get(srv.URL); err == nil {
		t.Fatal("the private certificate was trusted without the bundle")
	}
	tr, err := Transport(nil, bundle)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		t.Fatalf("with the bundle: %v", err)
	}
	resp.Body.Close()

	os.WriteFile(filepath.Join(dir, "empty.pem"), []byte("not a certificate\n"), 0o644)
	if _, err := Transport(nil, filepath.Join(dir, "empty.pem")); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a file without certificates: %v", err)
	}
	if _, err := Transport(nil, filepath.Join(dir, "missing.pem")); err == nil {
		t.Error("a missing file was accepted")
	}
}
