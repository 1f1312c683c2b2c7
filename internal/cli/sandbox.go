package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/sandbox"
)

// addSandboxFlag declares --sandbox, shared by run, do and resume.
func addSandboxFlag(cmd *cobra.Command, mode *string) {
	cmd.Flags().StringVar(mode, "sandbox", "", "confine every agent process: `MODE` none or bwrap (default sandbox.mode)")
}

// withSandboxFlag applies --sandbox to cfg. none turns the sandbox off,
// network settings included (there is then nothing to enforce them), and
// keeps trust_repo, which holds unconfined too; bwrap keeps cadre.yaml's
// network settings.
func withSandboxFlag(cfg config.Config, mode string) (config.Config, error) {
	switch mode {
	case "":
	case sandbox.ModeNone:
		cfg.Sandbox = config.Sandbox{Mode: sandbox.ModeNone, Network: sandbox.NetAllow, TrustRepo: cfg.Sandbox.TrustRepo}
	case sandbox.ModeBwrap:
		cfg.Sandbox.Mode = sandbox.ModeBwrap
	default:
		return cfg, usageErr(fmt.Errorf("--sandbox %q: want none or bwrap", mode))
	}
	return cfg, nil
}
