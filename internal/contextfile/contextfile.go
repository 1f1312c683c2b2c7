// Package contextfile is the format of a step's context file, the JSON
// file an agent is pointed at beside its prompt (docs/workflows.md#context-files):
// what it works on, where, and what earlier steps left for it.
package contextfile

// SchemaVersion is the format's version: 2 since "phase" is the cadre
// workflow's phase number and its name moved to "phaseName".
const SchemaVersion = 2

// File is one step's context file.
type File struct {
	SchemaVersion int            `json:"schemaVersion"`
	Agent         string         `json:"agent"`
	IssueNumber   *int           `json:"issueNumber"`
	ProjectName   string         `json:"projectName"`
	Repository    string         `json:"repository"`
	WorktreePath  string         `json:"worktreePath"`
	Phase         int            `json:"phase"`     // the phase's number in its workflow
	PhaseName     string         `json:"phaseName"` // the phase (or stage) by name
	TaskID        string         `json:"taskId"`
	Config        Config         `json:"config"`
	InputFiles    []string       `json:"inputFiles"`
	OutputPath    string         `json:"outputPath"`
	Payload       map[string]any `json:"payload"`
}

// Config is the project's configuration an agent may need: its commands
// by name (install, build, test, lint).
type Config struct {
	Commands map[string]string `json:"commands"`
}
