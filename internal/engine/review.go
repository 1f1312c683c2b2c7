package engine

import "github.com/cadre-dev/cadre/internal/reply"

// reviewText is the auditor's output as the task file's review.
func reviewText(output string) string { return reply.Review(output) }
