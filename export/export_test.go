package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/export"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

type sink struct {
	mu     sync.Mutex
	events []ledger.Event
}

func (s *sink) Publish(e ledger.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

// TestCompleted: a completed session's export is the SessionExport JSON of
// the session, in dir (created if missing), named after the session, with
// nothing else left in dir, and announced once as session_exported.
func TestCompleted(t *testing.T) {
	ctx := context.Background()
	st, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l := ledger.New(st, ledger.Options{})
	who := ledger.Author{Name: "t", Email: "t@example.com"}
	s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "export"}, who)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"one", "two"} {
		if _, err := l.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: i == 0}, who); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "exports")
	ev := &sink{}
	path, err := export.Completed(ctx, l, dir, s.ID, ev)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), s.ID+"-") || filepath.Ext(path) != ".json" {
		t.Fatalf("export path %s, want %s/%s-<time>.json", path, dir, s.ID)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var x ledger.SessionExport
	if err := json.Unmarshal(b, &x); err != nil || len(x.Nodes) != 2 {
		t.Fatalf("export = %s (%v), want the session's two thoughts", b, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("export directory holds %d entries, want 1", len(ents))
	}
	if len(ev.events) != 1 || ev.events[0].Type != export.SessionExported || ev.events[0].Data["exportPath"] != path || ev.events[0].Data["reason"] != "completed" {
		t.Fatalf("events = %+v, want one session_exported naming %s", ev.events, path)
	}
}

// TestWriteNeverReplaces: two exports of a session in the same millisecond
// both survive, the second under a suffixed name.
func TestWriteNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 11, 24, 13, 0, 0, 0, time.UTC)
	p1, err := export.Write(dir, "s1", at, ledger.ExportJSON, []byte("first"))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := export.Write(dir, "s1", at, ledger.ExportJSON, []byte("second"))
	if err != nil {
		t.Fatal(err)
	}
	if p1 == p2 || !strings.HasSuffix(p2, "-2.json") {
		t.Fatalf("paths %s and %s, want the second suffixed -2", p1, p2)
	}
	for p, want := range map[string]string{p1: "first", p2: "second"} {
		if b, _ := os.ReadFile(p); !bytes.Equal(b, []byte(want)) {
			t.Errorf("%s holds %q, want %q", p, b, want)
		}
	}
}
