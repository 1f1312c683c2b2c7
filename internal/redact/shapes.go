package redact

import (
	"regexp"
	"strings"
)

// shapes are secrets recognisable by their form alone, whoever they belong
// to: what an agent read in a file of the repository, a log or its own
// environment and put in text meant for the public. Only shapes with a
// distinctive prefix or frame are listed, so ordinary prose and code are
// left alone; a key without one (an AWS secret access key, a password)
// is not recognisable and is caught only where it is labelled.
var shapes = regexp.MustCompile(anyOf(
	// GitHub: personal, OAuth, user-to-server, server-to-server and
	// refresh tokens; fine-grained personal tokens.
	`\bgh[pousr]_[A-Za-z0-9]{36,251}\b`,
	`\bgithub_pat_[A-Za-z0-9_]{22,244}\b`,
	// AWS access key ids (long-term, temporary and the other principals).
	`\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}\b`,
	// An AWS secret access key where it is labelled as one: the label stays.
	`(?i:aws_secret_access_key|secretaccesskey)["']?\s*[:=]\s*["']?[A-Za-z0-9/+]{40}\b`,
	// Anthropic, OpenAI (project, service-account, admin and legacy
	// keys) and other "sk-" model API keys.
	`\bsk-[A-Za-z0-9_-]{20,}`,
	// Google API keys.
	`\bAIza[0-9A-Za-z_-]{35}`,
	// Hugging Face access tokens.
	`\bhf_[A-Za-z]{34}\b`,
	// Slack bot, user, app-level, configuration and refresh tokens, and
	// incoming webhooks.
	`\bxox[abposre]-[0-9A-Za-z-]{10,}`,
	`\bxapp-[0-9]-[0-9A-Za-z-]{10,}`,
	`https://hooks\.slack\.com/services/[0-9A-Za-z/_-]{20,}`,
	// Private key blocks (PEM, OpenSSH, PGP), to their end or, cut
	// short, to the end of the text.
	`-----BEGIN[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]* PRIVATE KEY(?: BLOCK)?-----|\z)`,
))

// labelled is the part of a labelled match that stays: the label.
var labelled = regexp.MustCompile(`^(?i:aws_secret_access_key|secretaccesskey)["']?\s*[:=]\s*["']?`)

// anyOf is the alternation of patterns.
func anyOf(patterns ...string) string {
	return "(?:" + strings.Join(patterns, ")|(?:") + ")"
}

// WellKnown returns s with every secret of a well-known shape (GitHub
// tokens, AWS access keys, Anthropic, OpenAI and other "sk-" keys, Google
// API keys, Hugging Face and Slack tokens, private key blocks) replaced by
// Mask. It is for text going public, whose secrets need not be cadre's own.
func WellKnown(s string) string {
	return shapes.ReplaceAllStringFunc(s, func(m string) string {
		return labelled.FindString(m) + Mask
	})
}
