package engine

// phaseNumber is the context file's "phase" of a step in phase (or
// stage) of workflow wf (workflow.Registry.PhaseNumber).
func (e *Engine) phaseNumber(wf, phase string) int { return e.d.Workflows.PhaseNumber(wf, phase) }
