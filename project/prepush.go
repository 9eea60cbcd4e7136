package project

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/sharing"
)

// A code repository's reasoning travels in two directions on its own
// connection, never inside git's: the pre-push hook sends the sessions a
// pushed commit names to the bound URL (and only when git is pushing to
// that URL), and a read that meets a session it lacks fetches that
// session alone (FetchSessions), from the bound URL or, with none bound,
// from the remote the current branch tracks: reading is safe, publishing
// is what the binding guards.

// ErrNoFetchSource is returned by FetchSessions and Fetch when no
// reasoning remote is bound and the current branch tracks no remote.
var ErrNoFetchSource = errors.New("no reasoning remote is bound and the current branch tracks no remote, so there is nowhere to fetch reasoning from ('thoughtbox remote bind <remote-or-url>')")

// ErrReasoningRefsRefused is returned by CheckGitPushedRefs for a git
// push that would itself carry reasoning refs where they may not go.
var ErrReasoningRefsRefused = errors.New("git would push reasoning refs where they may not go")

// HookTarget is what a pre-push hook run for git's (remote, url) may do:
// the URL git is pushing to in this run as the config spells it and
// normalized as a binding is, and the bound URL ("" when none). Reasoning
// goes with the push only when the two are equal; for a remote of several
// push URLs git runs the hook once per URL, so reasoning goes with the
// run for the bound URL and with no other (it travels on our own
// connection to the bound URL, so the other URLs never receive it).
func HookTarget(ctx context.Context, r *coderepo.Repo, remoteName, url string) (target, bound string, err error) {
	if bound, err = r.Binding(ctx); err != nil {
		return "", "", err
	}
	raw, err := r.PushURL(ctx, remoteName, url)
	if err != nil {
		return "", bound, err
	}
	list, err := normalizeAll(r, []string{raw})
	if err != nil {
		return raw, bound, nil // not a URL we could dial: never the bound one
	}
	return list[0], bound, nil
}

// CheckGitPushedRefs refuses a git push that carries reasoning refs
// itself (git push --mirror, or a refspec naming refs/thoughtbox/): to a
// URL that is not the bound one, refs outside refs/thoughtbox/v1/ (local
// by design), or a private session's refs. toBound says whether this
// run of the hook pushes to the bound URL.
func CheckGitPushedRefs(updates []coderepo.RefUpdate, toBound bool, private []string) error {
	var bad []string
	for _, u := range updates {
		// What is sent is the local ref's chain, whatever name it takes
		// there (refs/thoughtbox/...:refs/heads/x leaks it just the same).
		ref := u.LocalRef
		if !strings.HasPrefix(ref, "refs/thoughtbox/") {
			ref = u.RemoteRef
		}
		if u.Deletes() || !strings.HasPrefix(ref, "refs/thoughtbox/") {
			continue
		}
		rest, shared := strings.CutPrefix(ref, "refs/thoughtbox/v1/")
		id := ""
		if s, ok := strings.CutPrefix(rest, "sessions/"); ok {
			id, _, _ = strings.Cut(s, "/")
		}
		switch {
		case !shared:
			bad = append(bad, ref+" (local to this repository)")
		case id != "" && slices.Contains(private, id):
			bad = append(bad, ref+" (session "+id+" is private)")
		case !toBound:
			bad = append(bad, ref+" (not the bound reasoning remote)")
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s; push the code without them (e.g. not --mirror), and share reasoning with 'thoughtbox push'", ErrReasoningRefsRefused, strings.Join(bad, ", "))
}

// fetchSource is where reads fetch reasoning from: the bound URL, else
// the fetch URL of the remote the current branch tracks.
func fetchSource(ctx context.Context, r *coderepo.Repo) (string, error) {
	bound, err := r.Binding(ctx)
	if err != nil || bound != "" {
		return bound, err
	}
	up, err := r.Upstream(ctx)
	if err != nil {
		return "", err
	}
	if up == "" {
		return "", ErrNoFetchSource
	}
	fetch, _, err := r.RemoteURLs(ctx, up)
	if errors.Is(err, coderepo.ErrNoGitRemote) {
		fetch = []string{up} // branch.<b>.remote may be a URL
	} else if err != nil {
		return "", err
	}
	list, err := normalizeAll(r, fetch[:1])
	if err != nil {
		return "", err
	}
	return list[0], nil
}

// FetchSessions brings the named sessions' refs (every ref under each
// one's folder, nothing else: no other session, no knowledge zone) from
// where reads fetch reasoning, checked as a pull checks what it brings
// in, and has the ledger read them. Sessions the remote lacks are simply
// not there afterwards.
func (p *Project) FetchSessions(ctx context.Context, ids []string) (*sharing.PullResult, error) {
	return p.fetch(ctx, ids, time.Time{}, nil)
}

// Fetch brings every session the remote has (since zero), or those whose
// main chain's tip was committed at or after since, with the knowledge
// zone and the notebooks, from where reads fetch reasoning.
func (p *Project) Fetch(ctx context.Context, since time.Time, progress io.Writer) (*sharing.PullResult, error) {
	return p.fetch(ctx, nil, since, progress)
}

func (p *Project) fetch(ctx context.Context, ids []string, since time.Time, progress io.Writer) (*sharing.PullResult, error) {
	r := codeRepo(p)
	if r == nil {
		return nil, errors.New("fetch: the ledger is standalone; fetch is for a ledger kept in a code repository (a standalone one uses 'thoughtbox pull')")
	}
	from, err := fetchSource(ctx, r)
	if err != nil {
		return nil, err
	}
	to, err := transferOptions(p.cfg, progress)
	if err != nil {
		return nil, err
	}
	if ids != nil {
		to.Sessions, to.SessionsOnly = ids, true
	}
	to.Since = since
	return p.pull(ctx, from, to)
}
