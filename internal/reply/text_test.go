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

// TestPullRequest: a composer's "# title" line is the title and the rest
// the body, without the SIGNAL BLOCK; without one, all of it is the body.
func TestPullRequest(t *testing.T) {
	title, body, titled := PullRequest("# Fix it\n\n## Summary\nDone.\n\n### SIGNAL BLOCK\n- Result: SUCCESS\n")
	if !titled || title != "Fix it" || body != "## Summary\nDone." {
		t.Errorf("PullRequest = %q, %q, %v", title, body, titled)
	}
	title, body, titled = PullRequest("Just a body.\n")
	if titled || title != "" || body != "Just a body." {
		t.Errorf("untitled: %q, %q, %v", title, body, titled)
	}
}
