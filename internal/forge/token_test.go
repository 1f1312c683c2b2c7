package forge

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestTokenFrom(t *testing.T) {
	const secret = "ghp_abcdefghijklmnop"
	ghSays := func(tok string, err error) func(context.Context) (string, error) {
		return func(context.Context) (string, error) { return tok, err }
	}
	ghUnused := func(context.Context) (string, error) {
		t.Error("gh consulted although the variable was set")
		return "", nil
	}
	tests := []struct {
		name     string
		env      map[string]string
		tokenEnv string
		gh       func(context.Context) (string, error)
		want     string
		wantErr  []string
	}{
		{name: "default variable", env: map[string]string{"GITHUB_TOKEN": secret}, gh: ghUnused, want: secret},
		{name: "variable trimmed", env: map[string]string{"GITHUB_TOKEN": " " + secret + "\n"}, gh: ghUnused, want: secret},
		{name: "configured variable", env: map[string]string{"GITHUB_TOKEN": "other", "MY_TOKEN": secret}, tokenEnv: "MY_TOKEN", gh: ghUnused, want: secret},
		{name: "configured variable empty falls to gh", env: map[string]string{"GITHUB_TOKEN": "other"}, tokenEnv: "MY_TOKEN", gh: ghSays(secret+"\n", nil), want: secret},
		{name: "gh token", gh: ghSays(secret, nil), want: secret},
		{name: "gh missing", gh: ghSays("", ErrNoGH), wantErr: []string{"$GITHUB_TOKEN is empty", "gh is not installed", "export GITHUB_TOKEN", "github.token_env", "gh auth login"}},
		{name: "no gh function", wantErr: []string{"gh is not installed"}},
		{name: "gh not logged in", gh: ghSays("", errors.New("exit status 1: no oauth token found for github.com")), wantErr: []string{"gh auth token failed: exit status 1: no oauth token"}},
		{name: "gh prints nothing", gh: ghSays("  ", nil), wantErr: []string{"printed nothing"}},
		{name: "configured name in error", tokenEnv: "CORP_GH", gh: ghSays("", ErrNoGH), wantErr: []string{"$CORP_GH is empty", "export CORP_GH"}},
		{name: "token with inner space", env: map[string]string{"GITHUB_TOKEN": "ghp_abc " + secret}, gh: ghUnused, wantErr: []string{"$GITHUB_TOKEN", "whitespace"}},
		{name: "gh token with newline inside", gh: ghSays(secret+"\n"+secret, nil), wantErr: []string{"gh auth token", "whitespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			got, err := TokenFrom(context.Background(), getenv, tt.tokenEnv, tt.gh)
			if len(tt.wantErr) == 0 {
				if err != nil || got != tt.want {
					t.Fatalf("TokenFrom = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("TokenFrom = %q, want an error", got)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error shows the token or spans lines: %q", err)
			}
		})
	}
}

func TestGHHost(t *testing.T) {
	tests := map[string]string{
		"":                               "",
		"https://api.github.com/":        "",
		"https://github.com":             "",
		"https://ghe.example.com/api/v3": "ghe.example.com",
		"http://127.0.0.1:8080/":         "127.0.0.1",
	}
	for in, want := range tests {
		if got := ghHost(in); got != want {
			t.Errorf("ghHost(%q) = %q, want %q", in, got, want)
		}
	}
}
