package app

import (
	"context"
	"fmt"
	"io"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/telemetry"
)

// startTelemetry starts the export cfg and the OTEL_* variables ask for.
// One that cannot start is a warning, not a failed run: telemetry
// watches the work, it is not the work.
func startTelemetry(ctx context.Context, cfg config.Telemetry, getenv func(string) string, warn io.Writer) *telemetry.Telemetry {
	tel, err := telemetry.Start(ctx, cfg, getenv)
	if err != nil {
		fmt.Fprintln(warn, "cadre: warning: telemetry is off: "+err.Error())
		return &telemetry.Telemetry{}
	}
	return tel
}
