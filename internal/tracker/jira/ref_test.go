package jira_test

import (
	"testing"

	"github.com/cadre-dev/cadre/internal/tracker/jira"
)

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"PROJ-123", "PROJ-123", true},
		{"  AB_2-7 ", "AB_2-7", true},
		{"https://acme.atlassian.net/browse/PROJ-123", "PROJ-123", true},
		{"https://jira.corp/jira/browse/OPS-9?focusedCommentId=1", "OPS-9", true},
		{"https://acme.atlassian.net/jira/software/projects/PROJ/boards/1?selectedIssue=PROJ-123", "PROJ-123", true},
		{"https://acme.atlassian.net/jira/software/c/projects/PROJ/issues/PROJ-5", "PROJ-5", true},
		{"https://acme.atlassian.net/issues/?jql=project%3DPROJ&selectedIssue=PROJ-8", "PROJ-8", true},
		{"123", "", false},
		{"#123", "", false},
		{"proj-123", "", false},
		{"PROJ-0", "", false},
		{"PROJ-", "", false},
		{"1PROJ-2", "", false},
		{"https://acme.atlassian.net/browse/", "", false},
		{"https://acme.atlassian.net/jira/software/projects/PROJ/boards/1", "", false},
		{"ftp://acme/browse/PROJ-1", "", false},
	} {
		got, ok := jira.ParseKey(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseKey(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
