package project

import (
	"context"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// AddLinks records links of a session to commits of the code repository
// the ledger lives in (see gitstore.Store.AddLinks); it returns how many
// were new.
func (p *Project) AddLinks(ctx context.Context, session string, links []ledger.CodeLink) (int, error) {
	return p.store.AddLinks(ctx, session, links)
}

// ReadLinks returns a session's links and the tip of its links ref.
func (p *Project) ReadLinks(ctx context.Context, session string) ([]ledger.CodeLink, string, error) {
	return p.store.ReadLinks(ctx, session)
}

// LinkTips lists the tip of every session's links ref, by session.
func (p *Project) LinkTips(ctx context.Context) (map[string]string, error) {
	return p.store.LinkTips(ctx)
}
