package workflow

// cadrePhases are the cadre workflow's fixed phase numbers, which agents
// read in their context file as the pipeline's phase 1 to 5.
var cadrePhases = map[string]int{"analysis": 1, "planning": 2, "implementation": 3, "integration": 4, "pr": 5}

// stagePhases number the stage pipeline's stages like the cadre workflow's phases
// they do the work of: planning, implementation, review of it.
var stagePhases = map[string]int{StagePlan: 2, StageCode: 3, StageAudit: 4}

// PhaseNumber is the context file's "phase" (the current pipeline phase
// number) of a step in phase (or stage) of workflow wf. The cadre
// workflow keeps its fixed numbers, the stage pipeline numbers its stages
// like them, and any other workflow numbers its phases from 1 in the order
// it defines them.
func (r *Registry) PhaseNumber(wf, phase string) int {
	switch {
	case wf == PipelineWorkflow:
		return stagePhases[phase]
	case wf == "cadre" && cadrePhases[phase] > 0:
		return cadrePhases[phase]
	}
	if def, ok := r.Get(wf); ok {
		for i, p := range def.Phases {
			if p.Name == phase {
				return i + 1
			}
		}
	}
	// Not a registered workflow: triage's custom role sequence, which is
	// one phase.
	return 1
}
