package workflow

import (
	"strings"
	"testing"
)

func TestRoute(t *testing.T) {
	defs, err := LoadDefs("", func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	isRole := func(r string) bool { return r == "executor" || r == "critic" }
	tests := []struct {
		name, reply, want, warn string
	}{
		{"known workflow", `{"workflow":"DEBUG","roles":[],"reasoning":"r","answer":null}`, "debug", ""},
		{"quick with answer", `{"workflow":"quick","roles":[],"reasoning":"r","answer":"4"}`, "quick", ""},
		{"quick without answer", `{"workflow":"quick","roles":[],"reasoning":"r","answer":null}`, "standard", "no answer"},
		{"custom roles", `{"workflow":"CUSTOM","roles":["executor","critic"],"reasoning":"r","answer":null}`, "custom", ""},
		{"unknown roles", `{"workflow":"mine","roles":["wizard"],"reasoning":"r","answer":null}`, "standard", `"mine"`},
		{"no JSON", "I think standard.", "standard", "no usable decision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			def, warn := Route(tt.reply, defs, isRole)
			if def == nil || def.Name != tt.want {
				t.Fatalf("Route = %v, want %s", def, tt.want)
			}
			if (tt.warn == "") != (warn == "") || !strings.Contains(warn, tt.warn) {
				t.Fatalf("warning = %q, want one containing %q", warn, tt.warn)
			}
		})
	}
	if def, _ := Route(`{"workflow":"custom","roles":["executor"],"reasoning":"r","answer":null}`, defs, isRole); strings.Join(def.Roles(), ",") != "executor" {
		t.Fatalf("custom roles = %v, want [executor]", def.Roles())
	}
}
