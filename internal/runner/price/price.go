// Package price estimates what a model call cost from its token counts, for
// backends that report tokens but no cost (the Codex and Gemini CLIs).
//
// The built-in table holds list prices in USD per million tokens for the
// models those CLIs and Claude Code default to, as published on the vendors'
// pricing pages (platform.claude.com/docs/en/about-claude/pricing,
// developers.openai.com/api/docs/pricing, ai.google.dev/gemini-api/docs/pricing)
// when the table was last checked, November 2026. Long-context surcharges,
// batch discounts and cache storage fees are not modelled. Prices change:
// cadre.yaml `prices` overrides or extends the table by model name (see New).
//
// An estimate reads the four token counts of event.Usage as disjoint:
// InputTokens excludes cached input, which is counted in CacheReadTokens and
// CacheWriteTokens. Runners convert the CLIs' own conventions to that.
package price

import (
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
)

// Price is what a model costs, in US dollars per million tokens of each
// kind; cadre.yaml prices.MODEL writes one with these keys.
type Price struct {
	InputPerMTok      float64 `yaml:"input_per_mtok"`
	OutputPerMTok     float64 `yaml:"output_per_mtok"`
	CacheReadPerMTok  float64 `yaml:"cache_read_per_mtok"`
	CacheWritePerMTok float64 `yaml:"cache_write_per_mtok"`
}

// builtin is the list-price table, keyed by model name without date suffix.
// A key also prices its snapshots and previews (see extends); the longest
// matching key wins.
var builtin = map[string]Price{
	// Anthropic: base input, output, cache hits, 5-minute cache writes
	// (Haiku 5.5 at its rate for prompts up to 100k tokens).
	"claude-opus-5":     {InputPerMTok: 5, OutputPerMTok: 25, CacheReadPerMTok: 0.50, CacheWritePerMTok: 6.25},
	"claude-opus-5-5":   {InputPerMTok: 4, OutputPerMTok: 20, CacheReadPerMTok: 0.20, CacheWritePerMTok: 5},
	"claude-sonnet-5":   {InputPerMTok: 2, OutputPerMTok: 10, CacheReadPerMTok: 0.20, CacheWritePerMTok: 2.50},
	"claude-sonnet-5-5": {InputPerMTok: 2, OutputPerMTok: 10, CacheReadPerMTok: 0.10, CacheWritePerMTok: 2.50},
	"claude-haiku-5-5":  {InputPerMTok: 0.10, OutputPerMTok: 0.50, CacheReadPerMTok: 0.01, CacheWritePerMTok: 0.125},
	"claude-opus-4":     {InputPerMTok: 15, OutputPerMTok: 75, CacheReadPerMTok: 1.50, CacheWritePerMTok: 18.75},
	"claude-opus-4-1":   {InputPerMTok: 15, OutputPerMTok: 75, CacheReadPerMTok: 1.50, CacheWritePerMTok: 18.75},
	"claude-opus-4-5":   {InputPerMTok: 5, OutputPerMTok: 25, CacheReadPerMTok: 0.50, CacheWritePerMTok: 6.25},
	"claude-opus-4-6":   {InputPerMTok: 5, OutputPerMTok: 25, CacheReadPerMTok: 0.50, CacheWritePerMTok: 6.25},
	"claude-opus-4-7":   {InputPerMTok: 5, OutputPerMTok: 25, CacheReadPerMTok: 0.50, CacheWritePerMTok: 6.25},
	"claude-opus-4-8":   {InputPerMTok: 5, OutputPerMTok: 25, CacheReadPerMTok: 0.50, CacheWritePerMTok: 6.25},
	"claude-sonnet-4":   {InputPerMTok: 3, OutputPerMTok: 15, CacheReadPerMTok: 0.30, CacheWritePerMTok: 3.75},
	"claude-haiku-4-5":  {InputPerMTok: 1, OutputPerMTok: 5, CacheReadPerMTok: 0.10, CacheWritePerMTok: 1.25},
	"claude-3-5-haiku":  {InputPerMTok: 0.80, OutputPerMTok: 4, CacheReadPerMTok: 0.08, CacheWritePerMTok: 1},
	"claude-3-7-sonnet": {InputPerMTok: 3, OutputPerMTok: 15, CacheReadPerMTok: 0.30, CacheWritePerMTok: 3.75},

	// OpenAI: input, output, cached input (cache writes are not billed).
	"gpt-5":              {InputPerMTok: 1.25, OutputPerMTok: 10, CacheReadPerMTok: 0.125},
	"gpt-5-codex":        {InputPerMTok: 1.25, OutputPerMTok: 10, CacheReadPerMTok: 0.125},
	"gpt-5-codex-mini":   {InputPerMTok: 0.25, OutputPerMTok: 2, CacheReadPerMTok: 0.025},
	"gpt-5-mini":         {InputPerMTok: 0.25, OutputPerMTok: 2, CacheReadPerMTok: 0.025},
	"gpt-5-nano":         {InputPerMTok: 0.05, OutputPerMTok: 0.40, CacheReadPerMTok: 0.005},
	"gpt-5.1":            {InputPerMTok: 1.25, OutputPerMTok: 10, CacheReadPerMTok: 0.125},
	"gpt-5.1-codex":      {InputPerMTok: 1.25, OutputPerMTok: 10, CacheReadPerMTok: 0.125},
	"gpt-5.1-codex-max":  {InputPerMTok: 1.25, OutputPerMTok: 10, CacheReadPerMTok: 0.125},
	"gpt-5.1-codex-mini": {InputPerMTok: 0.25, OutputPerMTok: 2, CacheReadPerMTok: 0.025},
	"gpt-5.2":            {InputPerMTok: 1.75, OutputPerMTok: 14, CacheReadPerMTok: 0.175},
	"gpt-5.2-codex":      {InputPerMTok: 1.75, OutputPerMTok: 14, CacheReadPerMTok: 0.175},
	"gpt-5.3-codex":      {InputPerMTok: 1.75, OutputPerMTok: 14, CacheReadPerMTok: 0.175},
	"gpt-5.4":            {InputPerMTok: 2.50, OutputPerMTok: 15, CacheReadPerMTok: 0.25},
	"gpt-5.4-mini":       {InputPerMTok: 0.75, OutputPerMTok: 4.50, CacheReadPerMTok: 0.075},
	"gpt-5.4-nano":       {InputPerMTok: 0.20, OutputPerMTok: 1.25, CacheReadPerMTok: 0.02},
	"gpt-5.5":            {InputPerMTok: 5, OutputPerMTok: 30, CacheReadPerMTok: 0.50},
	"gpt-4.1":            {InputPerMTok: 2, OutputPerMTok: 8, CacheReadPerMTok: 0.50},
	"o3":                 {InputPerMTok: 2, OutputPerMTok: 8, CacheReadPerMTok: 0.50},
	"o3-mini":            {InputPerMTok: 1.10, OutputPerMTok: 4.40, CacheReadPerMTok: 0.55},
	"o4-mini":            {InputPerMTok: 1.10, OutputPerMTok: 4.40, CacheReadPerMTok: 0.275},

	// Google: input and output (thinking included) up to 200k-token
	// prompts, context-cache reads.
	"gemini-2.5-pro":        {InputPerMTok: 1.25, OutputPerMTok: 10, CacheReadPerMTok: 0.125},
	"gemini-2.5-flash":      {InputPerMTok: 0.30, OutputPerMTok: 2.50, CacheReadPerMTok: 0.03},
	"gemini-2.5-flash-lite": {InputPerMTok: 0.10, OutputPerMTok: 0.40, CacheReadPerMTok: 0.01},
	"gemini-3-pro":          {InputPerMTok: 2, OutputPerMTok: 12, CacheReadPerMTok: 0.20},
	"gemini-3-flash":        {InputPerMTok: 0.50, OutputPerMTok: 3, CacheReadPerMTok: 0.05},
	"gemini-3.1-pro":        {InputPerMTok: 2, OutputPerMTok: 12, CacheReadPerMTok: 0.20},
	"gemini-3.1-flash-lite": {InputPerMTok: 0.25, OutputPerMTok: 1.50, CacheReadPerMTok: 0.025},
	"gemini-3.5-flash":      {InputPerMTok: 1.50, OutputPerMTok: 9, CacheReadPerMTok: 0.15},
}

// aliases are the short names the CLIs accept for a model family, mapped to
// the table entry that prices the model they named when the table was
// checked.
var aliases = map[string]string{
	"sonnet": "claude-sonnet-4",
	"opus":   "claude-opus-4-5",
	"haiku":  "claude-haiku-4-5",
}

// Table prices models: the built-in list prices overlaid with the project's
// own. The zero value and a nil *Table price from the built-in list alone.
type Table struct {
	over map[string]Price // keyed by normalized model name
}

// New returns a table in which overrides (cadre.yaml `prices`, keyed by
// model name) replace or extend the built-in prices.
func New(overrides map[string]Price) *Table {
	t := &Table{over: make(map[string]Price, len(overrides))}
	for name, p := range overrides {
		if k := normalize(name); k != "" {
			t.over[k] = p
		}
	}
	return t
}

// Lookup prices a model from the built-in table alone.
func Lookup(model string) (Price, bool) { return (*Table)(nil).Lookup(model) }

// Estimate prices usage from the built-in table alone.
func Estimate(model string, u event.Usage) (float64, bool) {
	return (*Table)(nil).Estimate(model, u)
}

// Lookup finds the price of model. The name is matched without case, without
// a provider prefix ("openai/gpt-5", "models/gemini-2.5-pro"), without a
// context-size tag ("claude-sonnet-4-5[1m]"), and against the longest table
// entry it is a snapshot of (so "claude-sonnet-4-5-20250929" is priced as
// "claude-sonnet-4", "gemini-3-pro-preview" as "gemini-3-pro"). An override
// wins over a built-in entry of the same name, and a longer entry wins over a
// shorter one wherever it comes from. The aliases sonnet, opus and haiku are
// understood.
func (t *Table) Lookup(model string) (Price, bool) {
	name := normalize(model)
	if name == "" {
		return Price{}, false
	}
	if full, ok := aliases[name]; ok {
		if t != nil {
			if p, ok := t.over[name]; ok {
				return p, true
			}
		}
		name = full
	}
	best, bestLen, found := Price{}, -1, false
	for k, p := range builtin {
		if len(k) > bestLen && extends(name, k) {
			best, bestLen, found = p, len(k), true
		}
	}
	if t != nil {
		for k, p := range t.over {
			// >= so that an override of a built-in name wins the tie.
			if len(k) >= bestLen && extends(name, k) {
				best, bestLen, found = p, len(k), true
			}
		}
	}
	return best, found
}

// Estimate returns the cost in USD of usage on model, and whether the model
// has a price. A cache price of zero falls back to the input price: a table
// entry that does not say what cached tokens cost should not make them free.
func (t *Table) Estimate(model string, u event.Usage) (float64, bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	read, write := p.CacheReadPerMTok, p.CacheWritePerMTok
	if read == 0 {
		read = p.InputPerMTok
	}
	if write == 0 {
		write = p.InputPerMTok
	}
	micro := float64(u.InputTokens)*p.InputPerMTok +
		float64(u.OutputTokens)*p.OutputPerMTok +
		float64(u.CacheReadTokens)*read +
		float64(u.CacheWriteTokens)*write
	return micro / 1e6, true
}

// normalize lowercases a model name and strips what does not change its
// price: surrounding space, a provider prefix, a bracketed tag.
func normalize(model string) string {
	s := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.IndexByte(s, '['); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// extends reports whether name is key itself or a snapshot of it: key
// followed by an "@" or ":" tag, or by "-" and a version, a date or a
// preview/latest/exp suffix. Any other word after "-" names another model:
// gemini-2.5-flash-lite is not a gemini-2.5-flash, nor gpt-5-pro a gpt-5.
func extends(name, key string) bool {
	rest, ok := strings.CutPrefix(name, key)
	switch {
	case !ok:
		return false
	case rest == "":
		return true
	case rest[0] == '@' || rest[0] == ':':
		return true
	case rest[0] != '-' || len(rest) == 1:
		return false
	case rest[1] >= '0' && rest[1] <= '9':
		return true
	}
	word, _, _ := strings.Cut(rest[1:], "-")
	switch word {
	case "preview", "latest", "exp", "experimental":
		return true
	}
	return false
}
