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
	// relative to Options.ExportDir, or an absolute one inside it or inside
	// the connection's bound root. Anywhere else is refused.
	Destination string `json:"destination,omitempty" schema:"note=a file in the export folder or the bound root"`
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

// exportDestination resolves an export destination: relative to the export
// directory, and in the end inside it or inside the connection's bound root
// (which must still be one of the client's roots). The check is made on
// the real path of the destination's folder, so a symbolic link cannot
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
	var allowed []string
	if d := c.g.opts.ExportDir; d != "" {
		allowed = append(allowed, d)
	}
	if c.boundRoot != "" {
		if roots, err := c.clientRoots(ctx); err == nil && withinRoots(c.boundRoot, roots) {
			if u, err := url.Parse(c.boundRoot); err == nil && u.Scheme == "file" {
				allowed = append(allowed, filepath.FromSlash(u.Path))
			}
		}
	}
	if len(allowed) == 0 {
		return "", refuse("this server has no export directory and the connection has no bound root confirmed by the client; leave destination out to get the export in the reply")
	}
	path := dest
	if !filepath.IsAbs(path) {
		if c.g.opts.ExportDir == "" {
			return "", refuse("must be an absolute path inside the bound root %s (this server has no export directory)", c.boundRoot)
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
	return "", refuse("must be inside the export directory %s or the bound root; %s is outside", strings.Join(allowed, " or "), path)
}

// publish announces one of the gateway's events about a session.
func (g *Gateway) publish(t ledger.EventType, sessionID string, data map[string]any) {
	if g.opts.Events != nil {
		g.opts.Events.Publish(ledger.Event{Type: t, SessionID: sessionID, Timestamp: time.Now().UTC(), Data: data})
	}
}
