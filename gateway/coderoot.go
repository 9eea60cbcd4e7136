package gateway

import (
	"context"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// codeRoot is the project of the ledger kept in the code repository the
// bound root is in, when the connection is local and the root is in an
// enabled worktree: an agent whose client offers the repository as a
// root then keeps its reasoning with that code, as it would had the
// server been started there. A project named in bind_root wins. Over HTTP
// the answer is "" and a note that says why the root was not looked at.
func (c *call) codeRoot(ctx context.Context, p *bindRootParams) (project, note string, err error) {
	open := c.g.opts.OpenCodeRoot
	if open == nil || p.Project != "" {
		return "", "", nil
	}
	if c.remote {
		return "", "Over HTTP the root is a folder on the client's machine, so the server does not look for a code repository there; to keep reasoning in a repository's own ledger, run the server inside it (thoughtbox mcp, or serve --repo PATH).", nil
	}
	dir, ok := localPath(p.RootURI)
	if !ok {
		return "", "", nil
	}
	name, found, err := open(ctx, dir)
	if err != nil {
		e := ledger.InvalidField("rootUri", "reading the Git worktree at %s: %v", dir, err)
		e.Err = err
		return "", "", e
	}
	if !found {
		return "", "", nil
	}
	return name, "The root is an enabled Git worktree: sessions go to its own ledger (refs/thoughtbox/v1/), and its commits name the active session.", nil
}

// localPath is the folder a file:// URI names on this machine; ok is
// false for a URI naming another host.
func localPath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
		return "", false
	}
	p := u.Path
	// file:///C:/src is C:\src on Windows.
	if runtime.GOOS == "windows" && len(p) >= 3 && p[0] == '/' && p[2] == ':' {
		p = p[1:]
	}
	if !strings.HasPrefix(p, "/") && !filepath.IsAbs(filepath.FromSlash(p)) {
		return "", false
	}
	return filepath.Clean(filepath.FromSlash(p)), true
}
