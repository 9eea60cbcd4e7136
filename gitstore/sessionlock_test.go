package gitstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// conflictCounter is a Store that counts the ErrConflicts its Appends
// meet; LockSession is promoted from the embedded Store.
type conflictCounter struct {
	*Store
	conflicts atomic.Int64
}

func (c *conflictCounter) Append(ctx context.Context, req ledger.AppendRequest) (ledger.CommitID, error) {
	id, err := c.Store.Append(ctx, req)
	if errors.Is(err, ledger.ErrConflict) {
		c.conflicts.Add(1)
	}
	return id, err
}

// TestTwoStoresTakeTurnsOnOneSession: two stores on one repository (as two
// processes would be: separate log and lock descriptors) write one
// session, two writers each. With the session lock a writer catches up
// and appends while the other store waits its turn, so no Append meets a
// conflict (without it, dozens do), no call fails, and every thought is
// stored. THOUGHTBOX_SESSIONLOCK_THOUGHTS sets
// how many thoughts each writer adds; the latencies are logged for
// BENCHMARKS.md ("Store: writes and reads at library level"), never
// asserted.
func TestTwoStoresTakeTurnsOnOneSession(t *testing.T) {
	per := 40
	if v := os.Getenv("THOUGHTBOX_SESSIONLOCK_THOUGHTS"); v != "" {
		fmt.Sscan(v, &per)
	}
	twoStoresTakeTurns(t, per, 2, false)
}

// TestTwoStoresTakeTurnsWhileLockFilesGo: the same with a writer a store,
// each pausing between thoughts, while the stores keep letting their idle
// session locks go and deleting the files (sessionlock.Set.Close, as Close
// and eviction do). A holder that finds its file deleted opens the new
// one, so the writers still take turns: no conflicts, and every thought
// is stored. (A Remove that deleted files another store held made
// conflicts here in 2 of 5 runs.)
func TestTwoStoresTakeTurnsWhileLockFilesGo(t *testing.T) {
	twoStoresTakeTurns(t, 150, 1, true)
}

// twoStoresTakeTurns runs two stores' writers, writersPer each, on one
// session, per thoughts a writer. With churn the writers pause a little
// between thoughts, and a goroutine keeps letting the idle session locks
// of both stores go, deleting their files, until the writers end.
func twoStoresTakeTurns(t *testing.T, per, writersPer int, churn bool) {
	dir := t.TempDir()
	var stores [2]*conflictCounter
	var ledgers [2]*ledger.Ledger
	for i := range stores {
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores[i] = &conflictCounter{Store: s}
		ledgers[i] = ledger.New(stores[i], ledger.Options{})
	}
	ctx := context.Background()
	sess, err := ledgers[0].StartSession(ctx, ledger.CreateSessionParams{Title: "shared"}, lockTestAuthor)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledgers[1].Load(ctx, sess.ID); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	errs := make(chan error, 2*writersPer)
	for i := range ledgers {
		for w := 0; w < writersPer; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; n < per; n++ {
					start := time.Now()
					_, err := ledgers[i].AddThought(ctx, sess.ID, ledger.ThoughtInput{Thought: fmt.Sprintf("s%d w%d n%d", i, w, n), NextThoughtNeeded: true}, lockTestAuthor)
					d := time.Since(start)
					if err != nil {
						errs <- fmt.Errorf("store %d writer %d thought %d: %w", i, w, n, err)
						return
					}
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
					if churn {
						time.Sleep(time.Duration(1+n%4) * 100 * time.Microsecond)
					}
				}
			}()
		}
	}
	removed := 0
	if churn {
		done := make(chan struct{})
		churned := make(chan int)
		go func() {
			n := 0
			for k := 0; ; k++ {
				select {
				case <-done:
					churned <- n
					return
				case <-time.After(50 * time.Microsecond):
				}
				st := stores[k%2].Store
				st.sessionLocks.Close()
				if _, err := os.Stat(filepath.Join(dir, "thoughtbox", "locks", sess.ID+".lock")); os.IsNotExist(err) {
					n++
				}
			}
		}()
		defer func() { t.Logf("the lock file was found deleted %d times", removed) }()
		wg.Wait()
		close(done)
		removed = <-churned
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if churn && removed == 0 {
		t.Error("the session's lock file was never deleted while the writers ran")
	}
	total := 2 * writersPer * per
	for i, s := range stores {
		// A writer holds the session while it catches up and appends,
		// so compare-and-swap never fails: no optimistic retries at all.
		if c := s.conflicts.Load(); c != 0 {
			t.Errorf("store %d met %d conflicts for %d thoughts: writers raced instead of taking turns", i, c, writersPer*per)
		}
	}
	// A fresh ledger reads what was stored, not a writer's view.
	v, err := ledger.New(stores[0].Store, ledger.Options{}).Load(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Session.ThoughtCount; got != total {
		t.Errorf("session has %d thoughts, want %d", got, total)
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		t.Logf("%d thoughts from 2 stores x %d writers: p50 %v, p99 %v, max %v; conflicts %d + %d",
			len(lat), writersPer, lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1], stores[0].conflicts.Load(), stores[1].conflicts.Load())
	}
}

// TestCloseDeletesSessionLockFiles: the lock files of the sessions a
// store locked are gone once it is closed (nobody else uses them), and
// the in-memory store, which no other process shares, locks without
// files.
func TestCloseDeletesSessionLockFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("lock files are kept on Windows (durable.Mutex.Remove)")
	}
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 5 {
		unlock, err := s.LockSession(ctx, fmt.Sprintf("session-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		unlock()
	}
	locks := filepath.Join(dir, "thoughtbox", "locks")
	if ents, err := os.ReadDir(locks); err != nil || len(ents) == 0 {
		t.Fatalf("no lock files while the store is open: %d (%v)", len(ents), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(locks); err != nil || len(ents) != 0 {
		t.Errorf("lock files left after Close: %d (%v)", len(ents), err)
	}
	m, err := OpenMemory(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	unlock, err := m.LockSession(ctx, "session-0")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if _, err := m.LockSession(ctx, "Not A Session"); err == nil {
		t.Error("the in-memory store locked an invalid session id")
	}
}

var lockTestAuthor = ledger.Author{Name: "session-lock-test"}
