// Package sessionlock keeps the sessions' inter-process mutexes: a writer
// of a session takes its session's mutex for every thought, so that
// writers of one session in different processes take turns (see
// doc/architecture.md, "Locks"). The mutexes are durable.Mutex files in
// one folder, <id>.lock, kept open for the sessions written lately:
// opening the two lock files each time cost more than the locking.
//
// Lock order: Set.mu guards the table and is held only briefly, never
// while a mutex is waited for; a durable.Mutex is taken and let go with
// Set.mu released.
package sessionlock

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// Set keeps the mutexes of one folder's sessions, with their files open,
// for the sessions written lately.
type Set struct {
	dir     string
	timeout time.Duration

	mu    sync.Mutex
	made  bool // the locks folder exists
	m     map[string]*lock
	clock uint64 // counts turns, to tell the least recently used locks
	// closed is set by Close: a lock still being taken then is let go by
	// its last user.
	closed bool
}

type lock struct {
	m     *durable.Mutex
	users int // goroutines taking or holding it: it is not closed under them
	// quiet is set while this Set holds the mutex and nobody else held
	// it since this Set last let it go: no other writer that takes turns
	// can have moved the session meanwhile (see gitstore's ThoughtsSince).
	quiet bool
	used  uint64 // Set.clock at its last turn
}

// New returns the Set of the mutexes in dir, each waited for at most
// timeout when another process holds it. Nothing is created until a
// session is locked, so that opening a read-only data directory creates
// nothing.
func New(dir string, timeout time.Duration) *Set {
	return &Set{dir: dir, timeout: timeout}
}

// maxKept bounds the sessions whose lock files stay open (two
// descriptors each). Past it the least recently used quarter of those
// nobody is taking are let go, and their files deleted (see
// durable.Mutex.Remove): letting all of them go at once (as before) made
// each of 65 agents' sessions open its files afresh every few thoughts.
// It is 256, or less where the process may open few files (a soft
// RLIMIT_NOFILE of 1,024 gives 64, as it was before): a server keeps a
// store per open project, and HTTP connections and packs need
// descriptors too.
var maxKept = keptLocks(openFileLimit())

func keptLocks(limit uint64) int {
	if limit == 0 {
		return 256
	}
	return int(min(max(limit/16, 64), 256))
}

// Lock takes the session's mutex, waiting for another process that holds
// it; the returned func lets it go. The caller has checked sessionID.
func (ls *Set) Lock(ctx context.Context, sessionID string) (func(), error) {
	ls.mu.Lock()
	if !ls.made {
		// Made here, not by New, so that opening a read-only data
		// directory creates nothing.
		if err := os.MkdirAll(ls.dir, 0o755); err != nil {
			ls.mu.Unlock()
			return nil, err
		}
		ls.made = true
	}
	if ls.m == nil {
		ls.m = map[string]*lock{}
	}
	sl := ls.m[sessionID]
	if sl == nil {
		if len(ls.m) >= maxKept {
			ls.evict(maxKept / 4)
		}
		sl = &lock{m: durable.NewMutex(filepath.Join(ls.dir, sessionID+".lock"), ls.timeout)}
		ls.m[sessionID] = sl
	}
	sl.users++
	ls.clock++
	sl.used = ls.clock
	ls.mu.Unlock()
	h, err := sl.m.Lock(ctx)
	ls.mu.Lock()
	if err != nil {
		ls.done(sessionID, sl)
		ls.mu.Unlock()
		return nil, fmt.Errorf("session %s: %w", sessionID, err)
	}
	sl.quiet = !h.Others
	ls.mu.Unlock()
	return func() {
		ls.mu.Lock()
		sl.quiet = false
		ls.mu.Unlock()
		h.Unlock()
		ls.mu.Lock()
		ls.done(sessionID, sl)
		ls.mu.Unlock()
	}, nil
}

// done counts a user of sl out, and lets sl go if it was the last one
// after the Set was closed; the caller holds mu.
func (ls *Set) done(id string, sl *lock) {
	sl.users--
	if ls.closed && sl.users == 0 && ls.m[id] == sl && sl.m.Remove() {
		delete(ls.m, id)
	}
}

// Quiet reports whether this Set holds the session's mutex and nobody
// else held it since this Set last did.
func (ls *Set) Quiet(sessionID string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	sl := ls.m[sessionID]
	return sl != nil && sl.quiet
}

// Close lets go of the locks nobody is taking, deleting their files where
// nobody else uses them; a lock still being taken is let go by its last
// user. The Set may still be used after it.
func (ls *Set) Close() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.closed = true
	for id, sl := range ls.m {
		// One a goroutine is about to take is left to it (removed under
		// it, it would open files that nothing closes); its last user
		// removes it.
		if sl.users == 0 && sl.m.Remove() {
			delete(ls.m, id)
		}
	}
}

// evict lets go of the n least recently used locks that nobody is taking,
// deleting their files where nobody else uses them; the caller holds mu.
func (ls *Set) evict(n int) {
	idle := make([]string, 0, len(ls.m))
	for id, sl := range ls.m {
		if sl.users == 0 {
			idle = append(idle, id)
		}
	}
	slices.SortFunc(idle, func(a, b string) int { return cmp.Compare(ls.m[a].used, ls.m[b].used) })
	for _, id := range idle[:min(n, len(idle))] {
		if ls.m[id].m.Remove() {
			delete(ls.m, id)
		}
	}
}
