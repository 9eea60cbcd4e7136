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

// TestMutexRemove: Remove deletes an idle mutex's files, leaves them
// where another Mutex holds the lock or waits at the gate, refuses while
// a goroutine holds it, and a removed mutex is taken again on new files.
func TestMutexRemove(t *testing.T) {
	if !removable {
		t.Skip("Remove only closes the files on this system")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "s.lock")
	ctx := context.Background()
	exists := func(p string) bool {
		_, err := os.Stat(p)
		return err == nil
	}
	a, b := NewMutex(path, 30*time.Millisecond), NewMutex(path, 30*time.Millisecond)
	defer a.Close()
	defer b.Close()
	take := func(m *Mutex) *Held {
		t.Helper()
		h, err := m.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	h := take(a)
	if a.Remove() {
		t.Fatal("Remove closed a held mutex")
	}
	h.Unlock()
	if !a.Remove() {
		t.Fatal("Remove of an idle mutex refused")
	}
	if exists(path) || exists(path+".gate") {
		t.Fatal("Remove left the files of an idle mutex")
	}

	// Another holder: the files stay.
	take(a).Unlock()
	hb := take(b)
	if !a.Remove() {
		t.Fatal("Remove refused though no goroutine of a uses it")
	}
	if !exists(path) || !exists(path+".gate") {
		t.Fatal("Remove deleted the files another Mutex holds")
	}
	hb.Unlock()

	// A waiter at the gate: the files stay.
	take(a).Unlock()
	gate, err := os.OpenFile(path+".gate", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := tryLock(gate); !ok || err != nil {
		t.Fatalf("taking the gate: %v %v", ok, err)
	}
	a.Remove()
	gate.Close()
	if !exists(path) {
		t.Fatal("Remove deleted the files while another waited at the gate")
	}

	// b keeps the old files open across a's removal; once b holds the lock
	// it is on the new files, so a, which makes them again, is excluded.
	take(b).Unlock()
	take(a).Unlock()
	if !a.Remove() || exists(path) {
		t.Fatal("Remove left the files")
	}
	hb = take(b)
	if !exists(path) {
		t.Fatal("b holds the lock, but not on a file at the path")
	}
	if _, err := a.Lock(ctx); !errors.Is(err, ErrHeld) {
		t.Fatalf("a took the lock b holds after the files were removed: %v", err)
	}
	hb.Unlock()
	take(a).Unlock()
}
