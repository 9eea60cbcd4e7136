package gitstore

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// sessionLocks keeps the sessions' inter-process mutexes, with their files
// open, for the sessions written lately: a writer takes its session's
// mutex for every thought, and opening the two lock files each time cost
// more than the locking.
type sessionLocks struct {
	mu    sync.Mutex
	made  bool // the locks folder exists
	m     map[string]*sessionLock
	clock uint64 // counts turns, to tell the least recently used locks
	// closed is set by closeSessionLocks: a lock still being taken then is
	// let go by its last user.
	closed bool
}

type sessionLock struct {
	m     *durable.Mutex
	users int // goroutines taking or holding it: it is not closed under them
	// quiet is set while this store holds the mutex and nobody else held
	// it since this store last let it go: no other writer that takes
	// turns can have moved the session meanwhile (see ThoughtsSince).
	quiet bool
	used  uint64 // sessionLocks.clock at its last turn
}

// maxKeptSessionLocks bounds the sessions whose lock files stay open
// (two descriptors each). Past it the least recently used quarter of
// those nobody is taking are let go, and their files deleted (see
// durable.Mutex.Remove): letting all of them go at once (as before) made
// each of 65 agents' sessions open its files afresh every few thoughts.
// It is 256, or less where the process may open few files (a soft
// RLIMIT_NOFILE of 1,024 gives 64, as it was before): a server keeps a
// store per open project, and HTTP connections and packs need
// descriptors too.
var maxKeptSessionLocks = keptSessionLocks(openFileLimit())

func keptSessionLocks(limit uint64) int {
	if limit == 0 {
		return 256
	}
	return int(min(max(limit/16, 64), 256))
}

func (s *Store) lockSessionFiles(ctx context.Context, sessionID string) (func(), error) {
	ls := &s.sessionLocks
	ls.mu.Lock()
	if !ls.made {
		// Made here, not at open, so that opening a read-only data
		// directory creates nothing.
		if err := os.MkdirAll(s.locksDir, 0o755); err != nil {
			ls.mu.Unlock()
			return nil, err
		}
		ls.made = true
	}
	if ls.m == nil {
		ls.m = map[string]*sessionLock{}
	}
	sl := ls.m[sessionID]
	if sl == nil {
		if len(ls.m) >= maxKeptSessionLocks {
			ls.evict(maxKeptSessionLocks / 4)
		}
		sl = &sessionLock{m: durable.NewMutex(filepath.Join(s.locksDir, sessionID+".lock"), s.opts.LockTimeout)}
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
// after the store closed its locks; the caller holds mu.
func (ls *sessionLocks) done(id string, sl *sessionLock) {
	sl.users--
	if ls.closed && sl.users == 0 && ls.m[id] == sl && sl.m.Remove() {
		delete(ls.m, id)
	}
}

// sessionQuiet reports whether this store holds the session's mutex and
// nobody else held it since this store last did.
func (s *Store) sessionQuiet(sessionID string) bool {
	ls := &s.sessionLocks
	ls.mu.Lock()
	defer ls.mu.Unlock()
	sl := ls.m[sessionID]
	return sl != nil && sl.quiet
}

func (s *Store) closeSessionLocks() {
	ls := &s.sessionLocks
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
func (ls *sessionLocks) evict(n int) {
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

// chainAt reports whether this store's state of the chain ref is valid
// and at tip.
func (s *Store) chainAt(ref string, tip hash) bool {
	s.mu.Lock()
	c := s.chains[ref]
	s.mu.Unlock()
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.valid && c.tip == tip
}
