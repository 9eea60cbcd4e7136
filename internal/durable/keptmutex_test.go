package durable

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMutexOthers: a Mutex tells whether anybody else held it since its
// own last turn, from the record in the lock file. Two Mutexes of one
// path lock two open files, as two processes would.
func TestMutexOthers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lock")
	a, b := NewMutex(path, time.Second), NewMutex(path, time.Second)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	turn := func(m *Mutex, want bool, what string) {
		t.Helper()
		h, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if h.Others != want {
			t.Errorf("%s: Others = %v, want %v", what, h.Others, want)
		}
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
	turn(a, true, "first turn")
	turn(a, false, "a again")
	turn(a, false, "a a third time")
	turn(b, true, "b after a")
	turn(a, true, "a after b")
	if !a.Close() {
		t.Fatal("Close of an idle mutex refused")
	}
	turn(a, true, "a reopened")
}

// TestMutexFileReplaced: a lock file deleted while a Mutex keeps it open
// is opened afresh, so that a Mutex opening the new file still excludes
// it; and goroutines of one process exclude each other on one Mutex.
func TestMutexFileReplaced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.lock")
	a, b := NewMutex(path, 30*time.Millisecond), NewMutex(path, 30*time.Millisecond)
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	h, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.Unlock()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	h, err = a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Lock(ctx); !errors.Is(err, ErrHeld) {
		t.Fatalf("b took the lock a holds on the recreated file: %v", err)
	}
	if _, err := a.Lock(ctx); !errors.Is(err, ErrHeld) {
		t.Fatalf("a second goroutine took a held Mutex: %v", err)
	}
	if a.Close() {
		t.Fatal("Close closed a held mutex")
	}
	h.Unlock()
	hb, err := b.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hb.Unlock()
}
