package price

import (
	"math"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
)

func TestLookupBuiltin(t *testing.T) {
	tests := []struct {
		model  string
		wantOK bool
		in     float64 // InputPerMTok wanted
		out    float64 // OutputPerMTok wanted
	}{
		{"claude-sonnet-4-5-20250929", true, 3, 15},
		{"claude-sonnet-4-5[1m]", true, 3, 15},
		{"Claude-Sonnet-4", true, 3, 15},
		{"anthropic/claude-haiku-4-5", true, 1, 5},
		{"claude-opus-4-1-20250805", true, 15, 75},
		{"claude-opus-4-20250514", true, 15, 75},
		{"claude-opus-4-5-20251101", true, 5, 25},
		{"sonnet", true, 3, 15},
		{"opus", true, 5, 25},
		{"gpt-5", true, 1.25, 10},
		{"gpt-5-2025-08-07", true, 1.25, 10},
		{"openai/gpt-5-codex", true, 1.25, 10},
		{"gpt-5-codex-mini", true, 0.25, 2},
		{"gpt-5-mini", true, 0.25, 2},
		{"gpt-5.1-codex-max", true, 1.25, 10},
		{"gpt-5.3-codex", true, 1.75, 14},
		{"o3-mini", true, 1.10, 4.40},
		{"models/gemini-2.5-pro", true, 1.25, 10},
		{"gemini-2.5-flash-lite", true, 0.10, 0.40},
		{"gemini-2.5-flash-preview-09-2025", true, 0.30, 2.50},
		{"gemini-3-pro-preview", true, 2, 12},
		{"gemini-3.5-flash", true, 1.50, 9},
		// Lite is its own model, not a Flash snapshot.
		{"gemini-3.5-flash-lite", false, 0, 0},
		{"claude-opus-5-5", true, 4, 20},
		{"claude-opus-5", true, 5, 25},
		{"claude-sonnet-5-5-20261001", true, 2, 10},
		// A dot is part of a version, not a separator: gpt-5.9 is not gpt-5.
		{"gpt-5.9", false, 0, 0},
		{"gpt-5-pro", false, 0, 0},
		{"claude-3-5-haiku-latest", true, 0.80, 4},
		{"gemini-3.1-pro-preview-customtools", true, 2, 12},
		{"gpt-5-", false, 0, 0},
		{"gpt-50", false, 0, 0},
		{"llama-3.1-70b", false, 0, 0},
		{"", false, 0, 0},
		{"  ", false, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			p, ok := Lookup(tt.model)
			if ok != tt.wantOK {
				t.Fatalf("Lookup(%q) ok = %v, want %v", tt.model, ok, tt.wantOK)
			}
			if p.InputPerMTok != tt.in || p.OutputPerMTok != tt.out {
				t.Errorf("Lookup(%q) = %+v, want input %v output %v", tt.model, p, tt.in, tt.out)
			}
		})
	}
}

func TestLookupOverrides(t *testing.T) {
	table := New(map[string]Price{
		"GPT-5":          {InputPerMTok: 9, OutputPerMTok: 90},
		"my-local-model": {InputPerMTok: 0.01, OutputPerMTok: 0.02},
		"sonnet":         {InputPerMTok: 7, OutputPerMTok: 70},
		"claude-opus-4":  {InputPerMTok: 11, OutputPerMTok: 111},
	})
	tests := []struct {
		model string
		in    float64
	}{
		{"gpt-5", 9},                    // override replaces the built-in entry
		{"gpt-5-2025-08-07", 9},         // and prices its snapshots
		{"gpt-5-codex", 1.25},           // a longer built-in entry still wins
		{"ollama/my-local-model", 0.01}, // a new model
		{"my-local-model:latest", 0.01}, // with a tag
		{"sonnet", 7},                   // an alias can be overridden itself
		{"claude-opus-4-20250514", 11},  // prefix of an overridden entry
		{"claude-opus-4-5-20251101", 5}, // longer built-in entry wins
		{"gemini-2.5-pro", 1.25},        // untouched
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			p, ok := table.Lookup(tt.model)
			if !ok || p.InputPerMTok != tt.in {
				t.Errorf("Lookup(%q) = %+v, %v; want input %v", tt.model, p, ok, tt.in)
			}
		})
	}
	// The built-in table is not changed by an overlay.
	if p, _ := Lookup("gpt-5"); p.InputPerMTok != 1.25 {
		t.Errorf("built-in gpt-5 input = %v after New, want 1.25", p.InputPerMTok)
	}
	var zero Table
	if p, ok := zero.Lookup("gpt-5"); !ok || p.InputPerMTok != 1.25 {
		t.Errorf("zero Table Lookup(gpt-5) = %+v, %v; want the built-in price", p, ok)
	}
}

func TestEstimate(t *testing.T) {
	table := New(map[string]Price{
		"no-cache-price": {InputPerMTok: 2, OutputPerMTok: 4},
	})
	tests := []struct {
		name   string
		model  string
		usage  event.Usage
		want   float64
		wantOK bool
	}{
		{
			name:   "every category",
			model:  "claude-sonnet-4-5",
			usage:  event.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 2_000_000, CacheWriteTokens: 400_000},
			want:   3 + 1.5 + 0.6 + 1.5,
			wantOK: true,
		},
		{
			name:   "openai cached input",
			model:  "gpt-5-codex",
			usage:  event.Usage{InputTokens: 315, OutputTokens: 122, CacheReadTokens: 24448},
			want:   (315*1.25 + 122*10 + 24448*0.125) / 1e6,
			wantOK: true,
		},
		{
			name:   "missing cache price charges input price",
			model:  "no-cache-price",
			usage:  event.Usage{InputTokens: 10, CacheReadTokens: 20, CacheWriteTokens: 30, OutputTokens: 5},
			want:   (60*2 + 5*4) / 1e6,
			wantOK: true,
		},
		{
			name:   "zero usage",
			model:  "gpt-5",
			want:   0,
			wantOK: true,
		},
		{
			name:   "unknown model",
			model:  "mystery-1",
			usage:  event.Usage{InputTokens: 10},
			wantOK: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := table.Estimate(tt.model, tt.usage)
			if ok != tt.wantOK {
				t.Fatalf("Estimate ok = %v, want %v", ok, tt.wantOK)
			}
			if math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("Estimate = %v, want %v", got, tt.want)
			}
		})
	}
	if got, ok := Estimate("gpt-5", event.Usage{OutputTokens: 1_000_000}); !ok || got != 10 {
		t.Errorf("package Estimate = %v, %v; want 10, true", got, ok)
	}
}

// TestBuiltinTableSane guards against a typo in the table: every entry has
// input and output prices, output costs at least input, and cached input
// costs less than fresh input.
func TestBuiltinTableSane(t *testing.T) {
	for name, p := range builtin {
		if p.InputPerMTok <= 0 || p.OutputPerMTok < p.InputPerMTok {
			t.Errorf("%s: input %v output %v", name, p.InputPerMTok, p.OutputPerMTok)
		}
		if p.CacheReadPerMTok <= 0 || p.CacheReadPerMTok >= p.InputPerMTok {
			t.Errorf("%s: cache read %v not below input %v", name, p.CacheReadPerMTok, p.InputPerMTok)
		}
		if normalize(name) != name {
			t.Errorf("%s: key is not in normalized form", name)
		}
	}
	for alias, target := range aliases {
		if _, ok := builtin[target]; !ok {
			t.Errorf("alias %s names %s, which is not in the table", alias, target)
		}
	}
}
