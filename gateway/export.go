package gateway

// Exports: session export (manual, any format, the session stays open) and
// the export a completed session gets (seed 004, "Session lifecycle"). The
// ledger renders and package export writes the files; this file decides
// where a manual export may go and announces it.

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/thoughtbox/thoughtbox/export"
	"github.com/thoughtbox/thoughtbox/internal/durable"
	"github.com/thoughtbox/thoughtbox/ledger"
)

type sessionExportParams struct {
	SessionID      string `json:"sessionId,omitempty"`
	Format         string `json:"format,omitempty" schema:"enum=json|markdown|cipher"`
	ResolveAnchors bool   `json:"resolveAnchors,omitempty"`
	// Save also writes the export to a file in Options.ExportDir.
	Save bool `json:"save,omitempty"`
	// Destination writes the export to this file (implies save): a path
	// relative to Options.ExportDir, or an absolute one inside it, inside
	// one of Options.ExportDirs or, on a local (stdio) connection, inside
	// the bound root. Anywhere else is refused.
	Destination string `json:"destination,omitempty" schema:"note=a file in the export folder, a folder the server allows, or (stdio) the bound root"`
}

// exportHeader describes an export; the document itself follows it as a
// second text content.
type exportHeader struct {
	SessionID  string              `json:"sessionId"`
	Format     ledger.ExportFormat `json:"format"`
	ExportedAt time.Time           `json:"exportedAt"`
	Thoughts   int                 `json:"thoughts"`
	ExportPath string              `json:"exportPath,omitempty"`
	// Anchors is the anchor report, with resolveAnchors.
	Anchors *ledger.AnchorReport `json:"anchors,omitempty"`
	Note    string               `json:"note"`
}

func sessionExport(ctx context.Context, c *call, p *sessionExportParams) (any, error) {
	format, err := ledger.ParseExportFormat(p.Format)
	if err != nil {
		return nil, err
	}
	if p.Save && c.g.opts.ExportDir == "" {
		return nil, ledger.InvalidField("save", "this server has no export directory configured; leave save out to get the export in the reply")
	}
	var dest string
	if p.Destination != "" {
		if dest, err = c.exportDestination(ctx, p.Destination); err != nil {
			return nil, err
		}
	}
	v, err := c.viewOf(ctx, p.SessionID)
	if err != nil {
		return nil, err
	}
	h := &exportHeader{SessionID: v.Session.ID, Format: format, ExportedAt: time.Now().UTC(), Thoughts: v.Graph.Len(),
		Note: "The session stays open: exporting does not close it."}
	if p.ResolveAnchors {
		if h.Anchors, err = c.ledger.ResolveAnchors(ctx, v); err != nil {
			return nil, err
		}
	}
	doc, err := ledger.Export(v, ledger.ExportOptions{Format: format, At: h.ExportedAt, Anchors: h.Anchors})
	if err != nil {
		return nil, err
	}
	switch {
	case dest != "":
		if err := durable.CreateWhole(dest, doc); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return nil, ledger.InvalidField("destination", "%s already exists; exports never replace a file, pick another name", dest)
			}
			if errors.Is(err, syscall.ENAMETOOLONG) {
				return nil, ledger.InvalidField("destination", "%s is too long a path for this file system", dest)
			}
			return nil, ledger.Errorf(ledger.CodeStorage, "write the export of session %s to %s: %w", v.Session.ID, dest, err)
		}
		h.ExportPath = dest
	case p.Save:
		if h.ExportPath, err = export.Write(c.g.opts.ExportDir, v.Session.ID, h.ExportedAt, format, doc); err != nil {
			return nil, ledger.Errorf(ledger.CodeStorage, "write the export of session %s: %w", v.Session.ID, err)
		}
	}
	c.g.publish(export.SessionExported, v.Session.ID, export.EventData(v.Session.ID, format, h.Thoughts, h.ExportPath, "manual"))
	return &text{header: h, body: []string{string(doc)}}, nil
}

// closeSession ends the connection's session after a thought that needed
// no further thought (seed 004): the session is exported as SessionExport
// JSON to Options.ExportDir (when set), and the connection lets it go, so
// that its next thought starts a new session; load_context reopens this
// one. It returns the export's path, or why there is none: the thought is
// committed either way, so a failed export is reported, not returned as
// the call's error.
func (c *call) closeSession(ctx context.Context, id string) (path string, problem *ledger.Error) {
	defer c.setSession("")
	if c.g.opts.ExportDir == "" {
		return "", nil
	}
	path, err := export.Completed(ctx, c.ledger, c.g.opts.ExportDir, id, c.g.opts.Events)
	if err != nil {
		if e := ledger.AsError(err); e.Code != ledger.CodeInternal {
			return "", e
		}
		return "", ledger.Errorf(ledger.CodeStorage, "the session was closed, but its export could not be written: %w", err)
	}
	return path, nil
}

// maxNameBytes is the longest file or folder name the common file
// systems take (NAME_MAX on Linux and macOS, 255 UTF-16 units on NTFS).
const maxNameBytes = 255

// exportBases are the folders an export destination may lie in: the
// export folder, the folders the server's configuration allows
// (Options.ExportDirs) and, on a connection whose client is local (stdio,
// or an embedder's own transport), the bound root while the client's roots
// still list it. Over HTTP the client is not trusted with the server's
// file system, so its roots never add to the list.
func (c *call) exportBases(ctx context.Context) []string {
	var bases []string
	if d := c.g.opts.ExportDir; d != "" {
		bases = append(bases, d)
	}
	bases = append(bases, c.g.opts.ExportDirs...)
	if c.boundRoot == "" || c.remote {
		return bases
	}
	if roots, err := c.clientRoots(ctx); err == nil && withinRoots(c.boundRoot, roots) {
		if u, err := url.Parse(c.boundRoot); err == nil && u.Scheme == "file" {
			bases = append(bases, filepath.FromSlash(u.Path))
		}
	}
	return bases
}

// exportDestination resolves an export destination: relative to the export
// directory, and in the end inside one of exportBases. The check is made
// on the real path of the destination's folder, so a symbolic link cannot
// lead a write elsewhere.
func (c *call) exportDestination(ctx context.Context, dest string) (string, error) {
	refuse := func(format string, args ...any) error {
		e := ledger.InvalidField("destination", format, args...)
		e.Details["destination"] = dest
		return e
	}
	if strings.ContainsRune(dest, 0) {
		return "", refuse("must not contain a NUL byte")
	}
	for _, name := range strings.FieldsFunc(dest, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if len(name) > maxNameBytes {
			return "", refuse("holds a name of %d bytes; a file or folder name may have at most %d", len(name), maxNameBytes)
		}
	}
	allowed := c.exportBases(ctx)
	if len(allowed) == 0 {
		return "", refuse("this server has no export directory%s; leave destination out to get the export in the reply", c.rootsNote())
	}
	path := dest
	if !filepath.IsAbs(path) {
		if c.g.opts.ExportDir == "" {
			return "", refuse("must be an absolute path inside %s (this server has no export directory)", strings.Join(allowed, " or "))
		}
		path = filepath.Join(c.g.opts.ExportDir, path)
	}
	path = filepath.Clean(path)
	if strings.HasSuffix(dest, "/") || strings.HasSuffix(dest, string(filepath.Separator)) {
		return "", refuse("names a folder; give a file name")
	}
	for _, base := range allowed {
		if err := os.MkdirAll(base, 0o755); err != nil {
			continue
		}
		realBase, err := filepath.EvalSymlinks(base)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(filepath.Clean(base), path)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			continue
		}
		// The folder must exist (creating folders could follow a link out
		// of the base); then check where it really is.
		realDir, err := filepath.EvalSymlinks(filepath.Dir(path))
		if err != nil {
			return "", refuse("the folder %s does not exist; create it first or export into %s", filepath.Dir(path), base)
		}
		if r, err := filepath.Rel(realBase, realDir); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
			return "", refuse("leads outside %s through a symbolic link", base)
		}
		return filepath.Join(realDir, filepath.Base(path)), nil
	}
	return "", refuse("must be inside %s; %s is outside%s", strings.Join(allowed, " or "), path, c.rootsNote())
}

// rootsNote explains, on a connection whose client's roots do not count,
// why a bound root is not among the places an export may go.
func (c *call) rootsNote() string {
	if !c.remote || c.boundRoot == "" {
		return ""
	}
	return " (over HTTP the client's roots, such as the bound root " + c.boundRoot + ", do not widen where the server writes; the server's settings THOUGHTBOX_EXPORT_DIRS and serve --export-dir add folders)"
}

// publish announces one of the gateway's events about a session.
func (g *Gateway) publish(t ledger.EventType, sessionID string, data map[string]any) {
	if g.opts.Events != nil {
		g.opts.Events.Publish(ledger.Event{Type: t, SessionID: sessionID, Timestamp: time.Now().UTC(), Data: data})
	}
}
