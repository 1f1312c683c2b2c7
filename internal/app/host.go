package app

import (
	"context"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/webhook"
)

// Host is the code host of a workspace as cadre's commands use it: the
// engine's codehost.Forge, cadre watch's follow.Host, and what cadre
// status, the board and cadre worktrees ask of a pull (merge) request.
// GitHub and GitLab implement it; nothing above this package knows which
// one it has.
type Host interface {
	codehost.Forge
	codehost.Credentialed
	follow.Host
	// RemoteAuth is where git reaches remote of the repository at dir,
	// and the header carrying the token there ("" where none is sent).
	RemoteAuth(ctx context.Context, dir, remote string) (target, header string, err error)
	// PRState reports the pull request of a head branch: whether there
	// is one, and whether it is merged or closed.
	PRState(ctx context.Context, branch string) (found, merged, closed bool, err error)
	// PRStatus reports where pull request number stands.
	PRStatus(ctx context.Context, number int) (codehost.PRStatus, error)
	// KeepAnswersIn keeps the answers to conditional requests in the file
	// at path between processes; KeepAnswers writes them there.
	KeepAnswersIn(path string)
	KeepAnswers() error
	// Facts reads webhooks' deliveries as the follower takes them in.
	Facts(events []webhook.Event) []follow.Fact
	// SetWarn sets where what cadre should know of the repository once
	// goes (a protection it may not read).
	SetWarn(func(msg string))
	// useMask makes the host mask m's secrets (and add its token to m
	// once it learns it), so a token learnt late is masked everywhere.
	useMask(m *redact.Redactor)
}

// NewHost returns ws's code host, as cadre.yaml's forge (resolved by
// LoadConfig) names it; getenv reads the token's variable.
func NewHost(ws Workspace, getenv func(string) string) Host {
	if ws.Config.Forge.Type == config.ForgeGitLab {
		return NewGitLab(ws, getenv)
	}
	return NewGitHub(ws, getenv)
}

// answersFile is the name, under the state directory, of the file the
// host's answers to conditional requests are kept in.
func answersFile(cfg config.Config) string {
	return cfg.HostKey() + "-answers.json"
}

var _ Host = (*GitHub)(nil)
