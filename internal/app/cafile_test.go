package app_test

import (
	"context"
	"encoding/pem"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/forge/forgetest"
	"github.com/cadre-dev/cadre/internal/gitlab/gitlabtest"
)

// behindTLS serves plain's API over TLS with a certificate of its own,
// and writes that certificate to a bundle file under root.
func behindTLS(t *testing.T, plain, root string) (base, bundle string) {
	t.Helper()
	u, _ := url.Parse(plain)
	srv := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(u))
	t.Cleanup(srv.Close)
	bundle = "ca.pem"
	os.WriteFile(filepath.Join(root, bundle), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	return srv.URL, bundle
}

// ca_file makes a self-managed forge's private certificate trusted, for
// GitHub Enterprise and GitLab alike; without it the certificate is
// refused, and a bundle that cannot be read is named.
func TestCAFile(t *testing.T) {
	hosts := map[string]func(t *testing.T, root string, ca string) app.Host{
		"github": func(t *testing.T, root, ca string) app.Host {
			fake := forgetest.New(t, "tok")
			fake.AddRepo("acme", "widgets")
			fake.AddIssue("acme", "widgets", forgetest.Issue{Title: "over TLS"})
			base, bundle := behindTLS(t, fake.URL, root)
			cfg := config.Default()
			cfg.Repository, cfg.GitHub.APIURL, cfg.GitHub.CAFile = "acme/widgets", base+"/", strings.ReplaceAll(ca, "BUNDLE", bundle)
			return app.NewGitHub(app.Workspace{Root: root, Config: cfg}, func(string) string { return "tok" })
		},
		"gitlab": func(t *testing.T, root, ca string) app.Host {
			fake := gitlabtest.New(t, "tok")
			fake.AddProject("acme/widgets")
			fake.AddIssue("acme/widgets", gitlabtest.Issue{Title: "over TLS"})
			base, bundle := behindTLS(t, fake.URL, root)
			cfg := config.Default()
			cfg.Forge.Type, cfg.Repository, cfg.GitLab.APIURL, cfg.GitLab.CAFile = config.ForgeGitLab, "acme/widgets", base+"/api/v4", strings.ReplaceAll(ca, "BUNDLE", bundle)
			return app.NewGitLab(app.Workspace{Root: root, Config: cfg}, func(string) string { return "tok" })
		},
	}
	for name, host := range hosts {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			if is, err := host(t, t.TempDir(), "BUNDLE").Issue(ctx, "1"); err != nil || is.Title != "over TLS" {
				t.Errorf("with the bundle: %+v, %v", is, err)
			}
			if _, err := host(t, t.TempDir(), "").Issue(ctx, "1"); err == nil || !strings.Contains(err.Error(), "certificate") {
				t.Errorf("without the bundle: %v", err)
			}
			if _, err := host(t, t.TempDir(), "missing.pem").Issue(ctx, "1"); err == nil || !strings.Contains(err.Error(), name+".ca_file") {
				t.Errorf("a missing bundle: %v", err)
			}
		})
	}
}
