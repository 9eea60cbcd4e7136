package gateway

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// CodePermissionDenied is the error code of a call outside its token's
// scope.
const CodePermissionDenied ledger.Code = "PERMISSION_DENIED"

// minTokenLength keeps guessable tokens out of a tokens file.
const minTokenLength = 16

// Grant is what one bearer token may do: who its commits are by, and
// which projects it may read and write ("*" is every project). Write
// implies read.
type Grant struct {
	// Identity is the agent the token stands for; it becomes the author
	// of the connection's commits, whatever the client calls itself.
	Identity string
	read     map[string]bool
	write    map[string]bool
	line     int
}

// CanRead reports whether the grant covers reading project.
func (g *Grant) CanRead(project string) bool {
	return g == nil || g.read["*"] || g.read[project] || g.CanWrite(project)
}

// CanWrite reports whether the grant covers writing to project.
func (g *Grant) CanWrite(project string) bool {
	return g == nil || g.write["*"] || g.write[project]
}

// Tokens maps bearer tokens to their grants (THOUGHTBOX_AUTH_TOKENS_FILE).
type Tokens struct {
	byToken map[string]*Grant
}

// ParseTokens reads a tokens file: one token a line, as
//
//	<token> <identity> <scope>...
//
// where a scope is read:<project> or write:<project> (<project> may be
// "*"), and blank lines and lines starting with # are skipped. name is
// the file's name, for errors, which give the line and field.
func ParseTokens(r io.Reader, name string) (*Tokens, error) {
	t := &Tokens{byToken: map[string]*Grant{}}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("%s line %d: expected <token> <identity> <scope>... (a scope is read:PROJECT or write:PROJECT), got %d fields", name, n, len(f))
		}
		if len(f[0]) < minTokenLength {
			return nil, fmt.Errorf("%s line %d: field token: must be at least %d characters, got %d", name, n, minTokenLength, len(f[0]))
		}
		if prev, dup := t.byToken[f[0]]; dup {
			return nil, fmt.Errorf("%s line %d: field token: the same token is on line %d", name, n, prev.line)
		}
		g := &Grant{Identity: f[1], read: map[string]bool{}, write: map[string]bool{}, line: n}
		for _, s := range f[2:] {
			kind, project, ok := strings.Cut(s, ":")
			if !ok || project == "" || (kind != "read" && kind != "write") {
				return nil, fmt.Errorf("%s line %d: scope %q: expected read:PROJECT or write:PROJECT (PROJECT may be *)", name, n, s)
			}
			if kind == "read" {
				g.read[project] = true
			} else {
				g.write[project] = true
			}
		}
		t.byToken[f[0]] = g
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(t.byToken) == 0 {
		return nil, fmt.Errorf("%s: no tokens (expected lines of <token> <identity> <scope>...)", name)
	}
	return t, nil
}

// Len is the number of tokens.
func (t *Tokens) Len() int { return len(t.byToken) }

// lookup finds token's grant, comparing in constant time.
func (t *Tokens) lookup(token string) *Grant {
	var found *Grant
	for k, g := range t.byToken {
		if subtle.ConstantTimeCompare([]byte(k), []byte(token)) == 1 {
			found = g
		}
	}
	return found
}

// ReadScope says whether token is in the file, whom it stands for, and
// whether it may read project: what the Observatory, which only reads,
// needs of a token (observatory.Tokens).
func (t *Tokens) ReadScope(token, project string) (identity string, known, canRead bool) {
	g := t.lookup(token)
	if g == nil {
		return "", false, false
	}
	return g.Identity, true, g.CanRead(project)
}

const grantKey = "thoughtbox.grant"

// authorize requires a bearer token when one is configured (AuthToken,
// Tokens or both). The token's user id ties an MCP session to the token
// that opened it, so that another token cannot use that session.
func (g *Gateway) authorize(next http.Handler) http.Handler {
	if g.opts.AuthToken == "" && g.opts.Tokens == nil {
		return next
	}
	single := []byte(g.opts.AuthToken)
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		sum := sha256.Sum256([]byte(token))
		info := &auth.TokenInfo{UserID: hex.EncodeToString(sum[:8])}
		if len(single) > 0 && subtle.ConstantTimeCompare([]byte(token), single) == 1 {
			return info, nil
		}
		if g.opts.Tokens != nil {
			if gr := g.opts.Tokens.lookup(token); gr != nil {
				info.Extra = map[string]any{grantKey: gr}
				return info, nil
			}
		}
		return nil, auth.ErrInvalidToken
	}
	h := auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&challenger{ResponseWriter: w}, r)
	})
}

// challenger adds the WWW-Authenticate challenge RFC 6750 asks of a 401,
// which the SDK's middleware sends only with OAuth metadata.
type challenger struct{ http.ResponseWriter }

func (c *challenger) WriteHeader(code int) {
	if code == http.StatusUnauthorized && c.Header().Get("WWW-Authenticate") == "" {
		c.Header().Set("WWW-Authenticate", `Bearer realm="thoughtbox"`)
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *challenger) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (c *challenger) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// grantOf is the grant of the token that authorized r, if any.
func grantOf(r *http.Request) *Grant {
	info := auth.TokenInfoFromContext(r.Context())
	if info == nil {
		return nil
	}
	gr, _ := info.Extra[grantKey].(*Grant)
	return gr
}

// projectFree are the operations that read nothing of the connection's
// project, so that a token may move away from a project it cannot read
// (every connection starts in the server's own).
var projectFree = map[string]bool{"get_state": true, "navigate": true, "bind_root": true, "list_roots": true}

// checkScope refuses a call its token does not allow on the connection's
// project. It reads the call's resolved route, so that the sub-operation
// it judges is the one dispatch runs (the writing ones are marked in the
// operation and sub-operation tables).
func (c *call) checkScope() error {
	gr := c.grant
	if gr == nil {
		return nil
	}
	if !projectFree[c.route.op.name] && !gr.CanRead(c.project) {
		return scopeError(gr, "read", c.project)
	}
	if c.route.writes() && !gr.CanWrite(c.project) {
		e := scopeError(gr, "write to", c.project)
		e.Details["operation"] = c.route.name()
		return e
	}
	return nil
}

func scopeError(gr *Grant, what, project string) *ledger.Error {
	e := ledger.Errorf(CodePermissionDenied, "the token of %s may not %s project %q", gr.Identity, what, project)
	e.Details = map[string]any{"project": project, "identity": gr.Identity}
	return e
}
