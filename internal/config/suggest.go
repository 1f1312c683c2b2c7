package config

import "strings"

// closest returns the name in names nearest to key when the match is
// obvious: at most two edits away, fewer than half the name, and no other
// name as near. Otherwise it returns "".
func closest(key string, names []string) string {
	best, bestDist, tie := "", -1, false
	for _, name := range names {
		d := editDistance(strings.ToLower(key), name)
		if d > 2 || d*2 > len(name) {
			continue
		}
		switch {
		case bestDist < 0 || d < bestDist:
			best, bestDist, tie = name, d, false
		case d == bestDist:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}

// editDistance counts the insertions, deletions, substitutions and swaps of
// adjacent bytes that turn a into b (optimal string alignment distance).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
