package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/sandbox"
)

// addSandboxFlag declares --sandbox, shared by run, do and resume.
func addSandboxFlag(cmd *cobra.Command, mode *string) {
	cmd.Flags().StringVar(mode, "sandbox", "", "confine every agent process: `MODE` bwrap, none, or auto (bwrap where it works here; default sandbox.mode)")
}

// withSandboxFlag applies --sandbox to cfg. none turns the sandbox off,
// network settings included (there is then nothing to enforce them), and
// keeps trust_repo, which holds unconfined too; bwrap and auto keep
// cadre.yaml's network settings.
func withSandboxFlag(cfg config.Config, mode string) (config.Config, error) {
	switch mode {
	case "":
	case sandbox.ModeNone:
		cfg.Sandbox = config.Sandbox{Mode: sandbox.ModeNone, Network: sandbox.NetAllow, TrustRepo: cfg.Sandbox.TrustRepo}
	case sandbox.ModeBwrap, sandbox.ModeAuto:
		if mode == sandbox.ModeAuto && cfg.Sandbox.Network != "" && cfg.Sandbox.Network != sandbox.NetAllow {
			// As in cadre.yaml: auto may run unconfined, where nothing
			// enforces the network setting.
			return cfg, usageErr(fmt.Errorf("--sandbox auto: sandbox.network %s needs bwrap; use --sandbox bwrap", cfg.Sandbox.Network))
		}
		cfg.Sandbox.Mode = mode
	default:
		return cfg, usageErr(fmt.Errorf("--sandbox %q: want bwrap, none or auto", mode))
	}
	return cfg, nil
}

// sandboxChoice is the line a dry run shows: the confinement the run's
// agents would get, and under mode auto why it is that one.
func sandboxChoice(ctx context.Context, c config.Sandbox, getenv func(string) string) string {
	p, fallback, err := app.SandboxPolicy(ctx, c, getenv)
	switch {
	case err != nil:
		return "sandbox: bwrap asked for and NOT working here: " + err.Error()
	case fallback != nil:
		return fmt.Sprintf("sandbox: none (sandbox.mode auto falls back: %v)", fallback)
	case p == nil:
		return "sandbox: none (sandbox.mode none)"
	}
	return fmt.Sprintf("sandbox: bwrap (sandbox.mode %s, %s)", c.Mode, networkOf(c))
}

// networkOf says which network confined agents get: one for every item,
// or, with sandbox.network and sandbox.trust_repo unset, one by the item's
// trust.
func networkOf(c config.Sandbox) string {
	trusted, untrusted := c.Networks()
	if trusted == untrusted {
		return "network " + trusted
	}
	return fmt.Sprintf("network %s for trusted items, %s for untrusted ones", trusted, untrusted)
}
