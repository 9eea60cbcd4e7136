package project

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/gitstore/remote"
)

// A ledger kept in a code repository shares its reasoning with one URL
// only, bound on purpose (coderepo.BindKey in the repository's own
// .git/config). Its remotes are the code's: without a binding nothing is
// pushed or pulled, and a remote whose URLs are not the bound one is
// refused whatever its name, so that a fork, a mirror or a second push URL
// never receives reasoning by accident. What moves is what the layout
// shares (refs/thoughtbox/v1/), never a code branch, a local ref or a
// private session.

// ErrNotBound is returned by push and pull in a code repository that has
// no reasoning remote bound.
var ErrNotBound = errors.New("no reasoning remote is bound: nothing is pushed or pulled until you bind one with 'thoughtbox remote bind <remote-or-url>'")

// ErrNotBoundURL is returned by push and pull in a code repository for a
// remote or URL that is not the bound one.
var ErrNotBoundURL = errors.New("not the bound reasoning remote")

// ErrSeveralURLs is returned by Bind for a remote git would push to at
// several URLs: the URL to bind must then be named.
var ErrSeveralURLs = errors.New("the remote has several push URLs")

// Binding is a code repository's reasoning remote.
type Binding struct {
	// URL is where reasoning may go ("" when none is bound).
	URL string `json:"url"`
	// Remote names the git remote the URL was found through, when bind
	// was given a name.
	Remote string `json:"remote,omitempty"`
}

// CodeRepo is the code repository a configuration keeps its ledger in
// (nil for a standalone one).
func codeRepo(p *Project) *coderepo.Repo {
	if p.cfg == nil || p.cfg.Code == nil {
		return nil
	}
	cr := p.cfg.Code
	return &coderepo.Repo{Worktree: cr.Worktree, GitDir: cr.GitDir, CommonDir: cr.CommonDir}
}

// Bind records where the code repository's reasoning may be pushed: a git
// remote's push URL (its only pushurl, or its url), or a URL or path given
// directly. A remote with several push URLs is refused (ErrSeveralURLs):
// binding one of them would still let a push to that remote reach the
// others, so the URL is named instead, and pushes then go to it by URL.
func (p *Project) Bind(ctx context.Context, remoteOrURL string) (Binding, error) {
	r := codeRepo(p)
	if r == nil {
		return Binding{}, errors.New("remote bind: the ledger is standalone; bind is for a ledger kept in a code repository ('thoughtbox enable'), a standalone one shares through 'thoughtbox remote add'")
	}
	b, err := resolveBinding(ctx, r, remoteOrURL)
	if err != nil {
		return Binding{}, err
	}
	return b, r.Bind(ctx, b.URL)
}

func resolveBinding(ctx context.Context, r *coderepo.Repo, arg string) (Binding, error) {
	if strings.TrimSpace(arg) == "" {
		return Binding{}, fmt.Errorf("remote bind: expected a git remote's name or a URL: %w", remote.ErrInvalidRemoteURL)
	}
	if remote.ValidRemoteName(arg) == nil && !strings.ContainsAny(arg, "/:\\") {
		_, push, err := r.RemoteURLs(ctx, arg)
		if err != nil {
			return Binding{}, err
		}
		urls, err := normalizeAll(r, push)
		if err != nil {
			return Binding{}, err
		}
		if len(urls) > 1 {
			return Binding{}, fmt.Errorf("remote %q: git pushes it to %s: %w; bind the one URL reasoning may go to ('thoughtbox remote bind <url>')", arg, strings.Join(urls, ", "), ErrSeveralURLs)
		}
		return Binding{URL: urls[0], Remote: arg}, nil
	}
	u, err := remote.NormalizeURL(arg)
	if err != nil {
		return Binding{}, err
	}
	return Binding{URL: u}, nil
}

// normalizeAll makes a remote's URLs comparable with a binding: a
// relative path in .git/config is relative to the worktree, as git reads
// it.
func normalizeAll(r *coderepo.Repo, urls []string) ([]string, error) {
	out := make([]string, 0, len(urls))
	for _, u := range urls {
		if !strings.Contains(u, "://") && !filepath.IsAbs(u) && !strings.Contains(u, ":") {
			u = filepath.Join(r.Worktree, u)
		}
		n, err := remote.NormalizeURL(u)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// Unbind forgets the binding; it says whether there was one.
func (p *Project) Unbind(ctx context.Context) (bool, error) {
	r := codeRepo(p)
	if r == nil {
		return false, errors.New("remote unbind: the ledger is standalone; it has no reasoning remote to unbind")
	}
	return r.Unbind(ctx)
}

// Bound reads the binding (a zero Binding when none, or when the ledger
// is standalone).
func (p *Project) Bound(ctx context.Context) (Binding, error) {
	r := codeRepo(p)
	if r == nil {
		return Binding{}, nil
	}
	u, err := r.Binding(ctx)
	return Binding{URL: u}, err
}

// boundTarget checks what a push or pull in a code repository names (a
// git remote, a URL, or "" for the binding itself) against the binding,
// and returns the URL to dial: always the bound one, never what git
// would rewrite it to.
func boundTarget(ctx context.Context, r *coderepo.Repo, name, verb string) (string, error) {
	bound, err := r.Binding(ctx)
	if err != nil {
		return "", err
	}
	if bound == "" {
		return "", fmt.Errorf("%s: %w", verb, ErrNotBound)
	}
	if name == "" || name == bound {
		return bound, nil
	}
	var urls []string
	if remote.ValidRemoteName(name) == nil && !strings.ContainsAny(name, "/:\\") {
		fetch, push, err := r.RemoteURLs(ctx, name)
		if err != nil {
			return "", err
		}
		// A push must reach no URL but the bound one; a pull reads from
		// the remote's fetch URL.
		list := push
		if verb == "pull" {
			list = fetch
		}
		if urls, err = normalizeAll(r, list); err != nil {
			return "", err
		}
	} else {
		u, err := remote.NormalizeURL(name)
		if err != nil {
			return "", err
		}
		urls = []string{u}
	}
	for _, u := range urls {
		if u != bound {
			return "", fmt.Errorf("%s %s: it goes to %s, and this repository's reasoning is bound to %s only: %w (push to the bound remote, or rebind with 'thoughtbox remote bind')",
				verb, name, u, bound, ErrNotBoundURL)
		}
	}
	return bound, nil
}

// SetPrivate marks a session of a code repository's ledger private, or
// not, and says whether that changed anything. A private session is left
// out of every push; the mark is kept outside the ledger (see
// coderepo.SetPrivate), so it can never travel with the session.
func (p *Project) SetPrivate(id string, private bool) (bool, error) {
	r := codeRepo(p)
	if r == nil {
		return false, errors.New("private: the ledger is standalone; private sessions are for a ledger kept in a code repository, where reasoning shares the code's remotes")
	}
	return r.SetPrivate(id, private)
}

// PrivateSessions lists the sessions marked private (none in a
// standalone ledger).
func (p *Project) PrivateSessions() ([]string, error) {
	r := codeRepo(p)
	if r == nil {
		return nil, nil
	}
	return r.PrivateSessions()
}
