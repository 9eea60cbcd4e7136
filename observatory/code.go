package observatory

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/why"
)

// The code pages: when the ledger is kept in a code repository
// (Config.Code), the page shows the commits linked to a session, a
// commit's reasoning and a file's reasoning history. Every answer comes
// from package why, as the CLI's why and blame and the gateway's why do,
// so what links a commit to a session is decided in one place.
//
//	GET <base>                       {"repository": bool}
//	GET <base>/commit/{rev}          why.Answer for one commit
//	GET <base>/file?path=P[&from=&to=]  why.BlameAnswer: line ranges → commit → sessions
//	GET <base>/session/{id}          why.Linked: the commits naming the session
//
// <base> is /ui/code (always served: the page needs it) and /api/code
// (with the HTTP API), both behind the token and origin checks.

// notFoundError is answered with 404: the request was well formed, but
// names what the repository does not have.
type notFoundError struct{ err *ledger.Error }

func (e notFoundError) Error() string { return e.err.Error() }
func (e notFoundError) Unwrap() error { return e.err }

func notFound(field, format string, args ...any) error {
	return notFoundError{ledger.InvalidField(field, format, args...)}
}

func (o *Observatory) registerCode(mux *http.ServeMux, base string) {
	mux.HandleFunc("GET "+base, o.api(o.codeInfo))
	mux.HandleFunc("GET "+base+"/commit/{rev...}", o.api(o.codeCommit))
	mux.HandleFunc("GET "+base+"/file", o.api(o.codeFile))
	mux.HandleFunc("GET "+base+"/session/{id}", o.api(o.codeSession))
}

type codeInfo struct {
	Repository bool `json:"repository"`
}

func (o *Observatory) codeInfo(_ http.ResponseWriter, _ *http.Request) (any, error) {
	return codeInfo{Repository: o.cfg.Code != nil}, nil
}

// asker answers through package why, or says that the ledger is not kept
// in a code repository.
func (o *Observatory) asker() (*why.Asker, error) {
	if o.cfg.Code == nil {
		return nil, notFoundError{ledger.Errorf(ledger.CodeInvalidOperation,
			"this Observatory's ledger is kept apart from any code repository, so no commit names its reasoning: run `thoughtbox enable` in the code's repository and serve from there")}
	}
	return &why.Asker{Repo: o.cfg.Code, Sessions: o.ledger, Links: o.cfg.CodeLinks}, nil
}

// codeCommit answers for one commit. A range is refused: the page shows
// one commit, and a range could name the whole history.
func (o *Observatory) codeCommit(_ http.ResponseWriter, r *http.Request) (any, error) {
	ask, err := o.asker()
	if err != nil {
		return nil, err
	}
	rev := r.PathValue("rev")
	switch {
	case rev == "":
		return nil, ledger.InvalidField("rev", "expected a commit (an id, a branch, HEAD)")
	case strings.Contains(rev, ".."):
		return nil, ledger.InvalidField("rev", "expected one commit, not a range (%q); `thoughtbox why A..B` answers for a range", rev)
	}
	ans, err := ask.Commits(r.Context(), rev)
	if errors.Is(err, coderepo.ErrNoCommit) || err == nil && len(ans.Commits) == 0 {
		return nil, notFound("rev", "%q is no commit of the repository", rev)
	}
	return ans, err
}

// codeFile answers for a file's lines as the worktree has them: each run
// of lines, the commit that last changed it, and that commit's sessions.
func (o *Observatory) codeFile(_ http.ResponseWriter, r *http.Request) (any, error) {
	ask, err := o.asker()
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	p := q.Get("path")
	if p == "" {
		return nil, ledger.InvalidField("path", "expected a file, relative to the repository's root")
	}
	from, to, err := lineRange(q.Get("from"), q.Get("to"))
	if err != nil {
		return nil, err
	}
	repo := o.cfg.Code
	if filepath.IsAbs(filepath.FromSlash(p)) || strings.HasPrefix(p, "/") {
		return nil, ledger.InvalidField("path", "expected a path relative to the repository's root, got %q", p)
	}
	rel, err := repo.RelPath(repo.Worktree, filepath.FromSlash(p))
	if err != nil {
		return nil, ledger.InvalidField("path", "%q is outside the repository", p)
	}
	file := filepath.Join(repo.Worktree, filepath.FromSlash(rel))
	if fi, err := os.Stat(file); err != nil || !fi.Mode().IsRegular() {
		return nil, notFound("path", "%q is no file of the repository's worktree", p)
	}
	if err := checkLines(file, p, from, to); err != nil {
		return nil, err
	}
	ans, err := ask.Blame(r.Context(), rel, from, to)
	if err != nil {
		return nil, ledger.InvalidField("path", "%v", err)
	}
	return ans, nil
}

// checkLines refuses lines past the end of the file: git blame would,
// with a message of its own that names no field.
func checkLines(file, p string, from, to int) error {
	if to == 0 {
		return nil
	}
	f, err := os.Open(file)
	if err != nil {
		return notFound("path", "%q is no file of the repository's worktree", p)
	}
	defer f.Close()
	n, last := 0, byte('\n')
	buf := make([]byte, 64<<10)
	for n < to {
		k, err := f.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if last != '\n' {
		n++ // a last line without its newline
	}
	if to <= n {
		return nil
	}
	field, line := "to", to
	if from > n {
		field, line = "from", from
	}
	return ledger.InvalidField(field, "%q has %d lines, so line %d is past its end", p, n, line)
}

// lineRange reads from and to: whole numbers from 1, to not before from,
// to only with from; neither means the whole file.
func lineRange(fromS, toS string) (from, to int, err error) {
	for _, f := range []struct {
		name, s string
		dst     *int
	}{{"from", fromS, &from}, {"to", toS, &to}} {
		if f.s == "" {
			continue
		}
		n, err := strconv.Atoi(f.s)
		if err != nil || n < 1 {
			return 0, 0, ledger.InvalidField(f.name, "expected a line number (a whole number from 1), got %q", f.s)
		}
		*f.dst = n
	}
	switch {
	case to != 0 && from == 0:
		return 0, 0, ledger.InvalidField("from", "is needed with to")
	case to != 0 && to < from:
		return 0, 0, ledger.InvalidField("to", "must not be before from (%d), got %d", from, to)
	case from != 0 && to == 0:
		to = from
	}
	return from, to, nil
}

// codeSession lists the commits linked to a session of the ledger.
func (o *Observatory) codeSession(_ http.ResponseWriter, r *http.Request) (any, error) {
	ask, err := o.asker()
	if err != nil {
		return nil, err
	}
	id, err := o.sessionID(r)
	if err != nil {
		return nil, err
	}
	return ask.Linked(r.Context(), id)
}
