// Package cabundle trusts a PEM file of CA certificates beside the
// system's roots, for a self-managed code host whose certificate a
// private CA signed (github.ca_file, gitlab.ca_file).
package cabundle

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
)

// Transport is base (net/http's default when nil) trusting the
// certificates of the PEM file at path as well as the system's.
func Transport(base *http.Transport, path string) (*http.Transport, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New(path + ": no PEM certificate in it")
	}
	if base == nil {
		base = http.DefaultTransport.(*http.Transport)
	}
	t := base.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	t.TLSClientConfig.RootCAs = pool
	return t, nil
}
