package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// sessionFlag is serve's --session.
type sessionFlag struct {
	Session string `name:"session" placeholder:"ID" help:"Start every MCP connection in this session, at stage 1 as after load_context (env THOUGHTBOX_REASONING_SESSION_ID; a unique prefix will do)."`
}

// boundSession resolves the session serve is bound to ("" when none): a
// session the project does not hold is a SettingError naming the flag or
// variable, so that the server does not start on a typo.
func (f sessionFlag) boundSession(a *app) (string, error) {
	name, v := "--session", strings.TrimSpace(f.Session)
	if v == "" {
		name, v = config.EnvReasoningSession, strings.TrimSpace(a.cfg.Getenv(config.EnvReasoningSession))
	}
	if v == "" {
		return "", nil
	}
	id, err := a.ledger.Resolve(a.ctx, v)
	var amb *ledger.AmbiguousIDError
	switch {
	case errors.As(err, &amb):
		return "", &config.SettingError{Name: name, Value: v, Reason: fmt.Sprintf("the prefix matches %d sessions (%s); give more of the id", len(amb.Candidates), strings.Join(amb.Candidates, ", "))}
	case err != nil:
		return "", &config.SettingError{Name: name, Value: v, Reason: fmt.Sprintf("project %s has no such session ('thoughtbox sessions' lists them): %v", a.cfg.Project, ledger.AsError(err).Message)}
	}
	return id, nil
}
