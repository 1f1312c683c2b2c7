package web

import (
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// Board columns, in display order.
const (
	ColQueued      = "queued"
	ColPlan        = "plan"
	ColCode        = "code"
	ColReview      = "review"
	ColIntegration = "integration"
	ColPaused      = "paused"
	ColCompleted   = "completed"
	ColFailed      = "failed"
)

// Column is one column of the board.
type Column struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// Columns are the board's columns.
var Columns = []Column{
	{ColQueued, "Queued"}, {ColPlan, "Analysis / plan"}, {ColCode, "Code"}, {ColReview, "Review"},
	{ColIntegration, "Integration / PR"}, {ColPaused, "Paused"}, {ColCompleted, "Completed"}, {ColFailed, "Failed"},
}

// roleColumns places the built-in roles; a role not listed (a user's own)
// works on code.
var roleColumns = map[string]string{
	"triage": ColPlan, "issue-analyst": ColPlan, "planner": ColPlan, "implementation-planner": ColPlan,
	"architect": ColPlan, "codebase-scout": ColPlan, "researcher": ColPlan, "diagnoser": ColPlan,
	"auditor": ColReview, "code-reviewer": ColReview, "critic": ColReview, "judge": ColReview,
	"verifier": ColReview, "tester": ColReview, "gatekeeper": ColReview, "adjudicator": ColReview, "comparator": ColReview,
	"integration-checker": ColIntegration, "pr-composer": ColIntegration,
}

// actionColumns place the deterministic steps by kind.
var actionColumns = map[string]string{
	"commit": ColIntegration, "pr": ColIntegration, "publish": ColIntegration, "push": ColIntegration,
	"checks": ColReview, "gatekeep": ColReview,
}

func roleColumn(role string) string {
	if c, ok := roleColumns[role]; ok {
		return c
	}
	return ColCode
}

// stageColumn places a task file's stage.
func stageColumn(stage string) string {
	switch stage {
	case "plan":
		return ColPlan
	case "code":
		return ColCode
	case "audit":
		return ColReview
	}
	return ""
}

// itemColumn is where an item of the journal belongs; role is that of
// its running step, if any.
func itemColumn(status, stage, role string) string {
	switch status {
	case store.ItemCompleted:
		return ColCompleted
	case store.ItemFailed, store.ItemSkipped:
		return ColFailed
	case store.ItemPaused:
		return ColPaused
	case store.ItemRunning:
		if role != "" {
			return roleColumn(role)
		}
		if c := stageColumn(stage); c != "" {
			return c
		}
		return ColCode
	}
	return ColQueued // pending, or stopped and waiting for a resume
}

// eventColumn is where e moves its item's card, or "" when it does not
// move it.
func eventColumn(e event.Event) string {
	if e.Item == "" {
		return ""
	}
	switch e.Type {
	case event.TaskStarted:
		return stageColumn(e.Stage)
	case event.StepStarted:
		if e.Role != "" {
			return roleColumn(e.Role)
		}
		if strings.Contains(e.Step, "/publish/") {
			return ColIntegration
		}
		return actionColumns[e.Message]
	case event.ItemPaused:
		return ColPaused
	case event.ItemResumed:
		return ColQueued
	case event.TaskCompleted:
		return ColCompleted
	case event.TaskFailed:
		return ColFailed
	}
	return ""
}
