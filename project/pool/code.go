package pool

import (
	"context"
	"errors"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/notebook"
	"github.com/thoughtbox/thoughtbox/project"
)

// CodeProjectPrefix starts the name of a project that is a code
// repository's own ledger, reached through bind_root: no project of the
// data directory can have it (a ':' is not allowed there).
const CodeProjectPrefix = "code:"

// CodeRoot is gateway.Options.OpenCodeRoot: the ledger of the enabled
// worktree dir is in, as `thoughtbox mcp` started in that worktree would
// pick it. The server's own worktree is the server's own project; another
// is known by CodeProjectPrefix and its path from then on, and opened,
// held and closed as any other project. ok is false when dir is in no
// repository, in one not enabled, or the storage is in memory.
func (p *Pool) CodeRoot(ctx context.Context, dir string) (name string, ok bool, err error) {
	if p.o.Config.Storage != config.StorageFS {
		return "", false, nil // memory storage keeps no ledger in a repository
	}
	r, err := coderepo.Find(ctx, dir)
	if errors.Is(err, coderepo.ErrNotARepository) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if on, err := r.Enabled(ctx); err != nil || !on {
		return "", false, err
	}
	if own := p.o.Config.Code; own != nil && own.Worktree == r.Worktree {
		return p.o.Config.Project, true, nil
	}
	name = CodeProjectPrefix + r.Worktree
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.code == nil {
		p.code = map[string]*config.Config{}
	}
	if _, ok := p.code[name]; !ok {
		p.code[name] = p.o.Config.InCode(config.CodeRepo{Worktree: r.Worktree, GitDir: r.GitDir, CommonDir: r.CommonDir})
	}
	return name, true, nil
}

// CodeRepo is gateway.Options.CodeRepo: a repository bind_root moved a
// connection to, or else what own says of the name.
func (p *Pool) CodeRepo(name string, own func(string) *coderepo.Repo) *coderepo.Repo {
	p.mu.Lock()
	cfg := p.code[name]
	p.mu.Unlock()
	if cfg == nil {
		return own(name)
	}
	cr := cfg.Code
	return &coderepo.Repo{Worktree: cr.Worktree, GitDir: cr.GitDir, CommonDir: cr.CommonDir}
}

// Notebooks is gateway.Options.Notebooks: a code repository's notebooks
// are made with its own configuration, other projects' by plain.
func (p *Pool) Notebooks(plain func(string, ledger.NotebookStore) *notebook.Service) func(string, ledger.NotebookStore) *notebook.Service {
	return func(name string, store ledger.NotebookStore) *notebook.Service {
		p.mu.Lock()
		cfg := p.code[name]
		p.mu.Unlock()
		if cfg == nil {
			return plain(name, store)
		}
		return project.NewNotebooks(cfg, store)
	}
}
