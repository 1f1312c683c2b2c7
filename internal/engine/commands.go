package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/projectcmd"
)

// runChecks runs the project's configured commands in the item's tree and
// writes a Markdown summary (the integration-checker's input).
func (fx *flowExec) runChecks(ctx context.Context, id string) (map[string]int, string, error) {
	exits, sum, outPath, err := fx.runCommands(ctx, id, projectcmd.Names)
	if err != nil {
		return nil, "", err
	}
	return exits, outPath, writeStepFile(fx.ir.outDir, outPath, []byte(sum))
}

// runCommands runs the named project commands that cadre.yaml configures,
// under the item's confinement, and returns their exit codes, a Markdown
// summary and the step's output path.
func (fx *flowExec) runCommands(ctx context.Context, id string, names []string) (map[string]int, string, string, error) {
	e, ir := fx.e, fx.ir
	_, outPath, logPath := ir.stepFiles(id)
	b := projectcmd.Batch{Step: id, Lines: e.d.Config.Commands.ByName(), Dir: ir.dir, Sandbox: e.stepSandbox(ir, event.Event{Step: id}),
		Timeout: time.Duration(e.d.Config.Defaults.Timeout), Grace: time.Duration(e.d.Config.Limits.KillGrace), Log: logPath, Mask: e.d.Mask, Baseline: fx.baseline}
	exits, sum, err := b.Run(ctx, names)
	if err != nil {
		return nil, "", "", fmt.Errorf("item %s: %w", ir.it.ID, err)
	}
	return exits, sum, outPath, nil
}
