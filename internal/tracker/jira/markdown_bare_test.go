package jira

import (
	"strings"
	"testing"
)

// A bare address, alone or in prose, becomes one linked text node: the
// comments cadre posts end with a pull request's address.
func TestMarkdownToADFBareURL(t *testing.T) {
	for _, md := range []string{"https://github.com/acme/widgets/pull/1", "cadre finished this issue: https://github.com/acme/widgets/pull/1", "<https://x.example/a>"} {
		doc := string(MarkdownToADF(md))
		if strings.Count(doc, `"type":"link"`) != 1 || !strings.Contains(doc, `"href":"https://`) {
			t.Errorf("MarkdownToADF(%q) = %s", md, doc)
		}
	}
}
