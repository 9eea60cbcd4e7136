package durable

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestRecordKeptWhileOurs: a lock taken turn after turn with one Record
// leaves the record it wrote alone while it is still there (no write per
// turn), and writes it again once another holder's record replaced it.
func TestRecordKeptWhileOurs(t *testing.T) {
	dir := t.TempDir()
	holder := filepath.Join(dir, "log.holder")
	lf, err := os.OpenFile(filepath.Join(dir, "log"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	rec := NewRecord(holder)
	defer rec.Close()
	ctx := context.Background()
	turn := func() []byte {
		t.Helper()
		if err := Lock(ctx, lf, rec, time.Second); err != nil {
			t.Fatal(err)
		}
		defer Unlock(lf)
		data, err := os.ReadFile(holder)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	first := turn()
	if h, ok := ReadHolder(holder); !ok || h.PID != os.Getpid() {
		t.Fatalf("record after the first turn: %q", first)
	}
	if again := turn(); !bytes.Equal(again, first) {
		t.Fatalf("the second turn rewrote a record that was still its own:\n%q\n%q", first, again)
	}
	// Another process takes the lock and leaves its own record.
	other := make([]byte, recordSize)
	copy(other, "pid 1\nsince 2026-01-02T03:04:05Z\ncommand another\n")
	if err := os.WriteFile(holder, other, 0o644); err != nil {
		t.Fatal(err)
	}
	after := turn()
	if h, ok := ReadHolder(holder); !ok || h.PID != os.Getpid() || bytes.Equal(after, other) {
		t.Fatalf("the record was not written again after another holder's: %q", after)
	}
	if !bytes.Contains(after, []byte("pid "+strconv.Itoa(os.Getpid())+"\n")) {
		t.Fatalf("record %q does not name this process", after)
	}
}
