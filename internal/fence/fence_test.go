package fence

import "testing"

func TestCarries(t *testing.T) {
	const tag = "<!-- cadre:r:i:done -->"
	for body, want := range map[string]bool{
		"Done.\n\n" + tag:                                      true,
		"```\n" + tag + "\n```":                                false,
		"~~~~\n```\n" + tag + "\n~~~~\nafter":                  false,
		"````\nx\n````\n" + tag:                                true,
		"quoted:\n```text\n" + tag + "\n```\nand " + tag + ".": true,
		"no marker here":                                       false,
		"```\nunclosed\n" + tag:                                false,
	} {
		if got := Carries(body, tag); got != want {
			t.Errorf("Carries(%q) = %v, want %v", body, got, want)
		}
	}
}
