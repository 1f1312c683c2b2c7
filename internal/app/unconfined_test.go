package app_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/event"
)

// Agents of a cadre running as root with no confinement can change
// anything on the machine: the warning says so, whether nothing confines
// them by choice (mode none) or because bubblewrap does not work here
// (mode auto). Another user with no confinement is warned only under auto.
func TestWarnsOfRootWithNoConfinement(t *testing.T) {
	for _, tt := range []struct {
		name string
		mode string
		path string // PATH, where bubblewrap is looked for
		uid  int
		want string // in the warning; "" for none
	}{
		{"none as root", "none", os.Getenv("PATH"), 0, "sandbox.mode none: agents run as root with no confinement, so they can change anything on this machine: run cadre as another user, or set sandbox.mode: bwrap"},
		{"auto without bubblewrap as root", "auto", t.TempDir(), 0, "; agents run as root with no confinement, so they can change anything on this machine"},
		{"auto without bubblewrap", "auto", t.TempDir(), 1000, "sandbox.mode auto: agents run unconfined: "},
		{"none as a user", "none", os.Getenv("PATH"), 1000, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			os.WriteFile(filepath.Join(root, "cadre.yaml"), []byte("sandbox: {mode: "+tt.mode+"}\n"), 0o644)
			if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
				t.Fatalf("git init: %v %s", err, out)
			}
			getenv := func(k string) string {
				if k == "PATH" {
					return tt.path
				}
				return os.Getenv(k)
			}
			ctx := context.Background()
			cfg, err := app.LoadConfig(root, getenv)
			if err != nil {
				t.Fatal(err)
			}
			st, err := app.OpenStore(ctx, root)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var warned []string
			sink := event.SinkFunc(func(e event.Event) {
				if e.Type == event.Warning {
					warned = append(warned, e.Message)
				}
			})
			_, flush, err := app.NewEngine(ctx, app.Workspace{Root: root, Config: cfg}, st,
				app.Options{Getenv: getenv, Sinks: []event.Sink{sink}, Geteuid: func() int { return tt.uid }})
			if err != nil {
				t.Fatal(err)
			}
			flush()
			if tt.want == "" {
				if len(warned) != 0 {
					t.Errorf("warnings %q, want none", warned)
				}
				return
			}
			if len(warned) != 1 || !strings.Contains(warned[0], tt.want) {
				t.Errorf("warnings %q, want one saying %q", warned, tt.want)
			}
		})
	}
}
