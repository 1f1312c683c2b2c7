package tui

import "github.com/cadre-dev/cadre/internal/workflow"

// StepCount is how many steps an item of d runs when every gate passes at
// the first try: each role and action once, one round of each loop, one
// pass of a foreach body. It is the bar's denominator; rounds and plan tasks
// beyond it grow the bar as they happen, so it only ever errs low.
func StepCount(d *workflow.Def) int {
	n := 0
	for _, p := range d.Phases {
		n += countNodes(p.Steps)
	}
	return n
}

func countNodes(nodes []workflow.Node) int {
	n := 0
	for _, nd := range nodes {
		switch {
		case nd.Role != "", nd.Run != "":
			n++
		case len(nd.Parallel) > 0:
			n += countNodes(nd.Parallel)
		case nd.ForEach != "":
			n += countNodes(nd.Do)
		case nd.Loop != nil:
			n += countNodes(nd.Loop.Do)
		}
	}
	return n
}

// StepsFunc returns the expected step count of an item by its workflow and
// the stage it started from, for Config.Steps: the stage pipeline runs
// one step per remaining stage, then its commit; a declarative workflow its StepCount. An
// unknown workflow gives 0 (the bar then grows with the steps seen).
func StepsFunc(flows *workflow.Registry) func(name, stage string) int {
	return func(name, stage string) int {
		if name == workflow.PipelineWorkflow {
			return len(workflow.Remaining(stage)) + 1 // and its commit
		}
		if flows == nil {
			return 0
		}
		d, ok := flows.Get(name)
		if !ok {
			return 0
		}
		return StepCount(d)
	}
}
