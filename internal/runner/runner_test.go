package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

type nop struct{ name string }

func (n nop) Name() string                                  { return n.name }
func (nop) Capabilities() Caps                              { return Caps{} }
func (nop) Run(context.Context, Invocation) (Result, error) { return Result{}, nil }

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	r.Register("b", func(s Settings) (Runner, error) { return nop{s.Name}, nil })
	r.Register("a", func(s Settings) (Runner, error) { return nop{s.Name}, nil })
	if got := r.Types(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("Types = %v", got)
	}
	run, err := r.New("a", Settings{Name: "mine"})
	if err != nil || run.Name() != "mine" {
		t.Fatalf("New = %v, %v", run, err)
	}
	if _, err := r.New("zzz", Settings{}); !errors.Is(err, ErrUnknown) {
		t.Fatalf("unknown type error = %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("duplicate Register did not panic")
		}
	}()
	r.Register("a", nil)
}

func TestErrorKind(t *testing.T) {
	err := fmt.Errorf("step: %w", &Error{Kind: KindRateLimit, Runner: "claude", RetryAfter: 3 * time.Second, Msg: "429"})
	if KindOf(err) != KindRateLimit {
		t.Errorf("KindOf = %q", KindOf(err))
	}
	if got := err.Error(); got != "step: runner claude: rate-limit: 429 (retry after 3s)" {
		t.Errorf("message %q", got)
	}
	if KindOf(errors.New("plain")) != "" {
		t.Error("plain error classified")
	}
}

func TestRegistryDescriptors(t *testing.T) {
	newNop := func(s Settings) (Runner, error) { return nop{s.Name}, nil }
	r := NewRegistry()
	cli := Descriptor{Type: "z-cli", Kind: TypeCLI, Program: "zc", Install: "get zc", Env: []string{"ZC_KEY"}, SandboxHome: []string{".zc"}}
	r.Add(cli, newNop)
	r.Add(Descriptor{Type: "a-exec", Kind: TypeExec}, newNop)
	r.Register("fake", newNop)
	var order []string
	for _, d := range r.Descriptors() {
		order = append(order, d.Type)
	}
	if fmt.Sprint(order) != "[z-cli a-exec fake]" {
		t.Errorf("Descriptors in order %v, want the registration order [z-cli a-exec fake]", order)
	}
	if d, ok := r.Describe("z-cli"); !ok || d.Program != "zc" || d.Install != "get zc" {
		t.Errorf("Describe(z-cli) = %+v, %v; want the descriptor added", d, ok)
	}
	if d, ok := r.Describe("fake"); !ok || d.Kind != "" {
		t.Errorf("Describe(fake) = %+v, %v; want a descriptor without a kind", d, ok)
	}
	if _, ok := r.Describe("nope"); ok {
		t.Error("Describe of an unregistered type: ok")
	}
	for _, tt := range []struct {
		name string
		add  func()
	}{
		{"a type added twice", func() { r.Add(Descriptor{Type: "a-exec", Kind: TypeExec}, newNop) }},
		{"a name registered after a type", func() { r.Register("z-cli", newNop) }},
		{"an incomplete descriptor", func() { r.Add(Descriptor{Type: "y", Kind: TypeCLI, Program: "y"}, newNop) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("did not panic")
				}
			}()
			tt.add()
		})
	}
}

func TestDescriptorCheck(t *testing.T) {
	probe := func(base, key string) (string, http.Header) { return base + "/models", nil }
	cli := Descriptor{Type: "c", Kind: TypeCLI, Program: "c", Install: "get c", Env: []string{"C_KEY"}, SandboxHome: []string{".c"}}
	api := Descriptor{Type: "a", Kind: TypeAPI, BaseURL: "https://api.example.com", Probe: probe}
	tests := []struct {
		name    string
		d       Descriptor
		wantErr string // "" for a complete descriptor
	}{
		{"complete CLI", cli, ""},
		{"complete API", api, ""},
		{"exec", Descriptor{Type: "e", Kind: TypeExec}, ""},
		{"script", Descriptor{Type: "s", Kind: TypeScript}, ""},
		{"no name", Descriptor{Kind: TypeExec}, "no type name"},
		{"no kind", Descriptor{Type: "x"}, `kind ""`},
		{"CLI without install", with(cli, func(d *Descriptor) { d.Install = "" }), "without an install command"},
		{"CLI without program", with(cli, func(d *Descriptor) { d.Program = "" }), "without a program"},
		{"CLI without variables", with(cli, func(d *Descriptor) { d.Env = nil }), "without the variables"},
		{"CLI without home files", with(cli, func(d *Descriptor) { d.SandboxHome = nil }), "without the home files"},
		{"CLI with a base URL", with(cli, func(d *Descriptor) { d.BaseURL = "https://h" }), "with a model API's fields"},
		{"API without probe", with(api, func(d *Descriptor) { d.Probe = nil }), "without a probe"},
		{"API with a relative URL", with(api, func(d *Descriptor) { d.BaseURL = "api.example.com" }), "without an http(s) base URL"},
		{"API with an install command", with(api, func(d *Descriptor) { d.Install = "x" }), "with an agent CLI's fields"},
		{"API with a CLI's capabilities", with(api, func(d *Descriptor) { d.Caps.EditsFiles = true }), "with an agent CLI's fields"},
		{"exec with a program", Descriptor{Type: "e", Kind: TypeExec, Program: "p"}, "exec type with"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.d.Check()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Check = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	keyed := Descriptor{KeyRequired: func(base string) bool { return base == "https://api.example.com" }}
	if !keyed.NeedsKey("https://api.example.com") || keyed.NeedsKey("http://127.0.0.1:1") || (Descriptor{}).NeedsKey("x") {
		t.Error("NeedsKey does not follow KeyRequired, or is true without it")
	}
}

func with(d Descriptor, change func(*Descriptor)) Descriptor {
	change(&d)
	return d
}
