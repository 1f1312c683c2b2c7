package reply

import "testing"

func TestDemoteHeadings(t *testing.T) {
	in := "## Summary\ntext\n### Sub\n```\n## not a heading\n```\n#hashtag"
	want := "### Summary\ntext\n#### Sub\n```\n## not a heading\n```\n#hashtag"
	if got := demoteHeadings(in, 3); got != want {
		t.Errorf("got %q", got)
	}
	if got := demoteHeadings("### ok\n", 3); got != "### ok\n" {
		t.Errorf("changed already-deep headings: %q", got)
	}
}

// TestReview: a review is the output without its SIGNAL BLOCK (and the
// fence around it), its headings below "## Review".
func TestReview(t *testing.T) {
	in := "## Findings\nAll good.\n\n```\n### SIGNAL BLOCK\n- Result: PASS\n```\n"
	if got, want := Review(in), "### Findings\nAll good."; got != want {
		t.Errorf("Review = %q, want %q", got, want)
	}
}

// A composer's "# title" or labelled "Title: …" line gives the pull
// request its title, the label and the SIGNAL BLOCK staying out of the
// body; without one, all of the text is the body under the given title.
func TestPullRequest(t *testing.T) {
	for _, c := range []struct{ text, title, body string }{
		{"# Fix it\n\nBody.", "Fix it", "Body."},
		{"Title: Fix it\n\n## Summary\nBody.", "Fix it", "## Summary\nBody."},
		{"**Title:** Fix it\nBody.", "Fix it", "Body."},
		{"TITLE: Fix it", "Fix it", ""},
		{"Title:\nBody.", "issue title", "Body."},
		{"Just a body.\nMore.", "issue title", "Just a body.\nMore."},
	} {
		title, body := PullRequest(c.text+"\n\n### SIGNAL BLOCK\n- Result: SUCCESS\n", "issue title")
		if title != c.title || body != c.body {
			t.Errorf("PullRequest(%q) = %q, %q; want %q, %q", c.text, title, body, c.title, c.body)
		}
	}
}
