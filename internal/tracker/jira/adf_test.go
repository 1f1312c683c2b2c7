package jira_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/tracker/jira"
)

// A description as Jira Cloud's editor stores it.
const realisticADF = `{"type":"doc","version":1,"content":[
 {"type":"heading","attrs":{"level":2},"content":[{"type":"text","text":"Login fails"}]},
 {"type":"paragraph","content":[
   {"type":"text","text":"Reported by "},
   {"type":"mention","attrs":{"id":"5b10ac8d82e05b22cc7d4ef5","text":"@Ada Lovelace","accessLevel":""}},
   {"type":"text","text":" after the "},
   {"type":"text","text":"v2","marks":[{"type":"code"}]},
   {"type":"text","text":" release; see "},
   {"type":"text","text":"the runbook","marks":[{"type":"link","attrs":{"href":"https://wiki.acme.dev/runbook"}}]},
   {"type":"text","text":". "},
   {"type":"text","text":"Urgent","marks":[{"type":"strong"}]},
   {"type":"text","text":" "},
   {"type":"emoji","attrs":{"shortName":":fire:","id":"1f525","text":"🔥"}},
   {"type":"hardBreak"},
   {"type":"text","text":"really","marks":[{"type":"em"}]}
 ]},
 {"type":"bulletList","content":[
   {"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"open the page"}]},
     {"type":"orderedList","attrs":{"order":1},"content":[
       {"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"click login"}]}]},
       {"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"wait"}]}]}]}]},
   {"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"see the error"}]}]}
 ]},
 {"type":"codeBlock","attrs":{"language":"go"},"content":[{"type":"text","text":"if err != nil {\n\treturn err\n}"}]},
 {"type":"blockquote","content":[{"type":"paragraph","content":[{"type":"text","text":"quoted"}]}]},
 {"type":"rule"},
 {"type":"panel","attrs":{"panelType":"info"},"content":[{"type":"paragraph","content":[{"type":"text","text":"inside a panel"}]}]},
 {"type":"mediaSingle","content":[{"type":"media","attrs":{"id":"x","type":"file","collection":""}}]}
]}`

func TestADFToMarkdown(t *testing.T) {
	got := jira.ADFToMarkdown(json.RawMessage(realisticADF))
	want := "## Login fails\n\n" +
		"Reported by Ada Lovelace after the `v2` release; see [the runbook](https://wiki.acme.dev/runbook). **Urgent** 🔥\n*really*\n\n" +
		"- open the page\n  1. click login\n  2. wait\n- see the error\n\n" +
		"```go\nif err != nil {\n\treturn err\n}\n```\n\n" +
		"> quoted\n\n" +
		"---\n\n" +
		"inside a panel"
	if got != want {
		t.Errorf("ADFToMarkdown:\n%s\n--- want ---\n%s", got, want)
	}
	if strings.Contains(got, "@Ada") {
		t.Error("a mention kept its @: an agent repeating it would ping the person")
	}
}

func TestADFToMarkdownNotADF(t *testing.T) {
	if got := jira.ADFToMarkdown(json.RawMessage(`"plain *wiki* text"`)); got != "plain *wiki* text" {
		t.Errorf("a JSON string = %q, want it unquoted as it is", got)
	}
}

func TestMarkdownToADFCodeBlockRoundTrip(t *testing.T) {
	md := "Tests fail on `main`:\n\n```go\nfunc f() {\n\treturn // *not* emphasis\n}\n```\n\n- one\n- two with [a link](https://example.com/x)"
	doc := jira.MarkdownToADF(md)
	var root struct {
		Type    string `json:"type"`
		Version int    `json:"version"`
		Content []struct {
			Type  string         `json:"type"`
			Attrs map[string]any `json:"attrs"`
		} `json:"content"`
	}
	if err := json.Unmarshal(doc, &root); err != nil {
		t.Fatal(err)
	}
	if root.Type != "doc" || root.Version != 1 || len(root.Content) != 3 {
		t.Fatalf("doc = %s", doc)
	}
	if cb := root.Content[1]; cb.Type != "codeBlock" || cb.Attrs["language"] != "go" {
		t.Errorf("second block = %+v, want a go codeBlock", cb)
	}
	if back := jira.ADFToMarkdown(doc); back != md {
		t.Errorf("round trip:\n%s\n--- want ---\n%s", back, md)
	}
}

func TestMarkdownToADFEmphasisAndSnakeCase(t *testing.T) {
	md := "**bold** and *em* in some_snake_case name"
	if back := jira.ADFToMarkdown(jira.MarkdownToADF(md)); back != md {
		t.Errorf("round trip = %q, want %q", back, md)
	}
}
