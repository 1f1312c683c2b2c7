package proc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMinimalEnv(t *testing.T) {
	parent := map[string]string{
		"PATH":        "/usr/bin:/bin",
		"HOME":        "/home/u",
		"LANG":        "C.UTF-8",
		"SECRET":      "hunter2",
		"ANTHROPIC":   "key",
		"EMPTY":       "",
		"BAD=KEY":     "x",
		"OTHER_TOKEN": "t",
	}
	lookup := func(k string) (string, bool) { v, ok := parent[k]; return v, ok }
	tests := []struct {
		name   string
		lookup func(string) (string, bool)
		pass   []string
		set    map[string]string
		want   []string
	}{
		{
			name:   "only base keys present in lookup",
			lookup: lookup,
			want:   []string{"HOME=/home/u", "LANG=C.UTF-8", "PATH=/usr/bin:/bin"},
		},
		{
			name:   "pass adds present keys and skips absent ones",
			lookup: lookup,
			pass:   []string{"ANTHROPIC", "MISSING", "EMPTY", "ANTHROPIC"},
			want:   []string{"ANTHROPIC=key", "EMPTY=", "HOME=/home/u", "LANG=C.UTF-8", "PATH=/usr/bin:/bin"},
		},
		{
			name:   "set wins over lookup and adds keys",
			lookup: lookup,
			pass:   []string{"ANTHROPIC"},
			set:    map[string]string{"ANTHROPIC": "override", "PATH": "/opt/bin", "CADRE_ROLE": "coder"},
			want:   []string{"ANTHROPIC=override", "CADRE_ROLE=coder", "HOME=/home/u", "LANG=C.UTF-8", "PATH=/opt/bin"},
		},
		{
			name:   "keys that cannot be in an environment are dropped",
			lookup: lookup,
			pass:   []string{"BAD=KEY", ""},
			set:    map[string]string{"": "x", "A=B": "c", "NUL\x00": "v"},
			want:   []string{"HOME=/home/u", "LANG=C.UTF-8", "PATH=/usr/bin:/bin"},
		},
		{
			name: "nil lookup gives only set",
			pass: []string{"PATH"},
			set:  map[string]string{"Z": "1", "A": "2"},
			want: []string{"A=2", "Z=1"},
		},
		{
			name:   "nothing at all",
			lookup: func(string) (string, bool) { return "", false },
			want:   []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MinimalEnv(tt.lookup, tt.pass, tt.set)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("MinimalEnv mismatch (-want +got):\n%s", diff)
			}
			for _, e := range got {
				if e == "SECRET=hunter2" || e == "OTHER_TOKEN=t" {
					t.Errorf("MinimalEnv leaked %q", e)
				}
			}
		})
	}
}
