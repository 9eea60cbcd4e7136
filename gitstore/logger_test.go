package gitstore

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// lockedBuffer is a log written by the flusher's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestFlushFailureGoesToTheLogger: a flush that fails is reported to
// Options.Logger, naming the repository (the store never writes to the
// process's stderr), and the data waits in the log for the next flush.
func TestFlushFailureGoesToTheLogger(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.git")
	var buf lockedBuffer
	s, err := Open(dir, Options{FlushInterval: 5 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// A file where the packs go makes every flush fail until it is gone.
	packs := filepath.Join(dir, "objects", "pack")
	if err := os.Rename(packs, packs+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(packs, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l := ledger.New(s, ledger.Options{})
	sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "kept in the log"}, ledger.Author{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(buf.String(), `level=WARN msg="flush failed; the log keeps the data, retrying" repo=`+dir) {
		if time.Now().After(deadline) {
			t.Fatalf("no flush failure in the log within a minute; log:\n%s", buf.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := os.Remove(packs); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(packs+".aside", packs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := ledger.New(s, ledger.Options{}).Load(ctx, sess.ID); err != nil {
		t.Errorf("the session written while flushes failed: %v", err)
	}
}
