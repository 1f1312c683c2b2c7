package redact

import (
	"strings"
	"testing"
)

func TestWellKnownMasksSecretShapes(t *testing.T) {
	pem := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----"
	tests := []struct{ name, in, want string }{
		{"github classic", "token ghp_" + strings.Repeat("a1B2", 9) + ".", "token [REDACTED]."},
		{"github app", "ghs_" + strings.Repeat("Z9", 18), Mask},
		{"github fine-grained", "github_pat_11ABCDEFG0" + strings.Repeat("x", 12) + "_" + strings.Repeat("Yz1", 19) + "xy", Mask},
		{"aws access key", "id=AKIAIOSFODNN7EXAMPLE;", "id=[REDACTED];"},
		{"aws temporary key", "ASIAY34FZKBOKMUTVV7A", Mask},
		{"aws secret labelled", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n", "aws_secret_access_key = [REDACTED]\n"},
		{"aws secret quoted", `"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"`, `"SecretAccessKey": "[REDACTED]"`},
		{"anthropic", "ANTHROPIC_API_KEY=sk-ant-api03-" + strings.Repeat("Ab3_-", 10), "ANTHROPIC_API_KEY=[REDACTED]"},
		{"openai project", "(sk-proj-" + strings.Repeat("q7W", 16) + ")", "([REDACTED])"},
		{"openai legacy", "sk-" + strings.Repeat("T3BlbkFJ", 6), Mask},
		{"google", "key=AIzaSy" + strings.Repeat("-_a9", 8) + "Q", "key=[REDACTED]"},
		{"hugging face", "hf_" + strings.Repeat("abcDEFghij", 3) + "KLmn", Mask},
		{"slack bot", "xoxb-2400000000-2410000000000-AbCdEfGhIjKlMnOpQrStUvWx", Mask},
		{"slack app", "xapp-1-A0123456789-1234567890123-abcdef0123456789", Mask},
		{"slack webhook", "post to https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX now", "post to [REDACTED] now"},
		{"private key", "key:\n" + pem + "\nend", "key:\n[REDACTED]\nend"},
		{"private key cut short", "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA", Mask},
		{"two in a row", "AKIAIOSFODNN7EXAMPLE AKIAI44QH8DHBEXAMPLE", "[REDACTED] [REDACTED]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WellKnown(tt.in); got != tt.want {
				t.Errorf("WellKnown(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// Ordinary text, code and identifiers that merely resemble a shape are
// left as they are.
func TestWellKnownLeavesOrdinaryText(t *testing.T) {
	for _, in := range []string{
		"Fix the risk-assessment-for-the-frobnicator module",
		"ghp_short and github_pat_ alone",
		"commit 8929302b1e0f6a1f2f1c4d0c8c1f1a3c9d8e7f6a and uuid 123e4567-e89b-12d3-a456-426614174000",
		"AKIA is the prefix of an access key id; AKIAlowercase0000000 is not one",
		"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----",
		"aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}",
		"xoxb- is how a Slack bot token starts",
		"",
	} {
		if got := WellKnown(in); got != in {
			t.Errorf("WellKnown(%q) = %q, want it unchanged", in, got)
		}
	}
}
