// Package export writes session exports to files: the export a completed
// session gets (seed 004, "Session lifecycle") and the files a manual
// export saves. The ledger renders the documents; this package names the
// files and writes them whole. The MCP server and the command line both
// use it, so that closing a session from either writes the same file the
// same way, and the command line's path to it does not go through the
// MCP server.
package export

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/thoughtbox/thoughtbox/internal/durable"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// SessionExported is announced after an export (seed 002,
// ThoughtboxEvent).
const SessionExported ledger.EventType = "session_exported"

// EventData is the data of a SessionExported event. reason is "completed"
// or "manual"; path is left out when the export was not written to a file.
func EventData(sessionID string, format ledger.ExportFormat, thoughts int, path, reason string) map[string]any {
	d := map[string]any{"sessionId": sessionID, "format": string(format), "thoughtCount": thoughts, "reason": reason}
	if path != "" {
		d["exportPath"] = path
	}
	return d
}

// Completed writes the export a completed session gets (seed 004):
// SessionExport JSON in dir/{sessionId}-{timestamp}.json, and announces it
// as session_exported to events (which may be nil).
func Completed(ctx context.Context, l *ledger.Ledger, dir, id string, events ledger.EventSink) (string, error) {
	v, err := l.View(ctx, id)
	if err != nil {
		return "", err
	}
	at := time.Now().UTC()
	x := ledger.NewSessionExport(v, at)
	doc, err := x.Encode()
	if err != nil {
		return "", err
	}
	path, err := Write(dir, id, at, ledger.ExportJSON, doc)
	if err != nil {
		return "", err
	}
	if events != nil {
		events.Publish(ledger.Event{Type: SessionExported, SessionID: id, Timestamp: at,
			Data: EventData(id, ledger.ExportJSON, len(x.Nodes), path, "completed")})
	}
	return path, nil
}

// stamp names the export time in file names: UTC, to the millisecond,
// without the colons some file systems refuse.
const stamp = "2006-01-02T15-04-05.000Z"

// Write writes an export to dir/{sessionId}-{timestamp}.{ext} and returns
// its path. The file appears whole or not at all, its name survives a
// crash once Write returns (durable.CreateWhole), and it never replaces
// another export: a second one in the same millisecond gets a suffix.
func Write(dir, sessionID string, at time.Time, format ledger.ExportFormat, doc []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	base := sessionID + "-" + at.UTC().Format(stamp)
	for n := 1; ; n++ {
		name := base
		if n > 1 {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		path := filepath.Join(dir, name+"."+format.Extension())
		err := durable.CreateWhole(path, doc)
		if err == nil {
			return path, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
}
