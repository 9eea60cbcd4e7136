package durable

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
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

// TestMutexGateRemovedUnderAnOpener: a Mutex that opened the gate just
// before another's Remove deleted both files, and made the new lock file
// just after, finds on its first turn that its gate is gone and takes the
// one at the path, so that a waiter there still holds it off.
func TestMutexGateRemovedUnderAnOpener(t *testing.T) {
	if !removable {
		t.Skip("Remove only closes the files on this system")
	}
	path := filepath.Join(t.TempDir(), "s.lock")
	ctx := context.Background()
	a, b, c := NewMutex(path, time.Second), NewMutex(path, time.Second), NewMutex(path, time.Second)
	defer a.Close()
	defer b.Close()
	defer c.Close()
	h, err := a.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.Unlock()

	// b opens the gate, a removes both files, then b makes the lock file.
	oldGate, err := os.OpenFile(path+".gate", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Remove() {
		t.Fatal("Remove of an idle mutex refused")
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	ino, err := fileID(f)
	if err != nil {
		t.Fatal(err)
	}
	gateIno, err := fileID(oldGate)
	if err != nil {
		t.Fatal(err)
	}
	b.gate, b.f, b.ino, b.gateIno, b.checkGate = oldGate, f, ino, gateIno, true

	hb, err := b.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := pathID(path + ".gate")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := fileID(b.gate); got != id {
		t.Fatal("b holds the lock behind a gate no longer at the path")
	}
	// c waits at the gate b now shares; b, coming straight back, must let
	// c go first.
	var order atomic.Int32
	cAt := make(chan int32, 1)
	go func() {
		hc, err := c.Lock(ctx)
		if err != nil {
			t.Error(err)
			cAt <- 0
			return
		}
		cAt <- order.Add(1)
		hc.Unlock()
	}()
	for {
		g, err := os.OpenFile(path+".gate", os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		ok, _ := tryLock(g)
		g.Close() // closing drops a lock taken here
		if !ok {
			break // c is at the gate
		}
		time.Sleep(time.Millisecond)
	}
	hb.Unlock()
	hb, err = b.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bAt := order.Add(1)
	hb.Unlock()
	if at := <-cAt; at == 0 || at > bAt {
		t.Fatalf("b took the mutex again before c, which waited at the gate (c %d, b %d)", at, bAt)
	}
}
