package gitstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestDamagedMiddleRecordStopsOpen flips one byte in a record in the middle
// of a real log, with later acknowledged records after it: opening must
// fail with a STORAGE_ERROR naming the log and the offset, and leave the
// log byte for byte as it was (no cut, no flush of the later records).
func TestDamagedMiddleRecordStopsOpen(t *testing.T) {
	if _, err := exec.LookPath("cp"); err != nil {
		t.Skip("needs cp")
	}
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "p.git")
	s, err := Open(dir, Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	w := newSession(t, s, "a1b2c3d4-0000-4000-8000-0000000000ac")
	for n := 1; n <= 40; n++ {
		w.add("", ledger.ThoughtData{Thought: fmt.Sprintf("thought %d", n), ThoughtNumber: n, NextThoughtNeeded: true}, "")
	}
	// A copy taken while the writer is alive is what a kill -9 leaves:
	// acknowledged thoughts still in the log.
	crashed := filepath.Join(tmp, "crashed.git")
	if out, err := exec.Command("cp", "-a", dir, crashed).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	s.Close()

	logPath := filepath.Join(crashed, "thoughtbox", "log")
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int
	for off := len(wal.Magic); off+8 <= len(data); {
		n := int(binary.BigEndian.Uint32(data[off:]))
		if n == 0 {
			break
		}
		offs = append(offs, off)
		off += 8 + n
	}
	if len(offs) < 30 {
		t.Fatalf("only %d records in the log; the test needs the thoughts unflushed", len(offs))
	}
	bad := offs[len(offs)/3]
	data[bad+8+5] ^= 0x40
	if err := os.WriteFile(logPath, data, 0o644); err != nil {
		t.Fatal(err)
	}

	_, err = Open(crashed, Options{FlushInterval: time.Hour})
	if err == nil {
		t.Fatal("open succeeded over a damaged middle record")
	}
	if ledger.CodeOf(err) != ledger.CodeStorage {
		t.Errorf("code = %s, want %s (%v)", ledger.CodeOf(err), ledger.CodeStorage, err)
	}
	if msg := err.Error(); !strings.Contains(msg, logPath) || !strings.Contains(msg, fmt.Sprintf("offset %d", bad)) {
		t.Errorf("error %q does not name %s and offset %d", msg, logPath, bad)
	}
	after, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after, data) {
		t.Errorf("the damaged log was changed: %d bytes before, %d after", len(data), len(after))
	}
}

// TestTornTailStillOpens cuts the last record short: that is a write that
// died before its fsync, and open drops it and keeps the rest.
func TestTornTailStillOpens(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "p.git")
	s, err := Open(dir, Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id := "a1b2c3d4-0000-4000-8000-0000000000ad"
	w := newSession(t, s, id)
	for n := 1; n <= 5; n++ {
		w.add("", ledger.ThoughtData{Thought: fmt.Sprintf("thought %d", n), ThoughtNumber: n, NextThoughtNeeded: true}, "")
	}
	crashed := filepath.Join(tmp, "crashed.git")
	if out, err := exec.Command("cp", "-a", dir, crashed).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	s.Close()
	logPath := filepath.Join(crashed, "thoughtbox", "log")
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	last := -1
	for off := len(wal.Magic); off+8 <= len(data); {
		n := int(binary.BigEndian.Uint32(data[off:]))
		if n == 0 {
			break
		}
		last = off
		off += 8 + n
	}
	data[last+8+3] ^= 0x40 // the last record's checksum fails; zeros follow
	if err := os.WriteFile(logPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(crashed, Options{})
	if err != nil {
		t.Fatalf("a torn tail must still open: %v", err)
	}
	defer s2.Close()
	if _, err := s2.Verify(context.Background(), id, ledger.VerifyOptions{}); err != nil && !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Fatal(err)
	}
}
