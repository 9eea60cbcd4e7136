package gitstore

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/thoughtbox/thoughtbox/internal/durable"
	"github.com/thoughtbox/thoughtbox/ledger"
)

var (
	_ ledger.AccessKeeper = (*Store)(nil)
	_ ledger.AccessLookup = (*Store)(nil)
)

// accessTimes keeps sessions' lastAccessedAt beside the repository, in
// thoughtbox/accessed.json: reading a session is not a change to it, so it
// is no commit, but the time should outlive the process. It is written
// when the store closes (best effort, not synced: a crash loses the
// accesses since the last clean close, nothing else). With in-memory
// storage it lives in memory only.
type accessTimes struct {
	path  string // "" for memory only
	mu    sync.Mutex
	m     map[string]time.Time
	dirty bool
	// pending holds accesses recorded before m was read: a writer need
	// not read every session's time (a large file on a large ledger) to
	// record one.
	pending map[string]time.Time
	// file indexes the file for AccessedAt until m is read; fileBad says
	// it could not be (then m is read).
	file    *accessFile
	fileBad bool
}

func (a *accessTimes) loadLocked() {
	if a.m != nil {
		return
	}
	a.m = map[string]time.Time{}
	if a.path != "" {
		if data, err := os.ReadFile(a.path); err == nil {
			var m map[string]time.Time
			// The fast decoder: on a large ledger this file holds every
			// session's time, and a listing's first page waits for it.
			if fastjson.Unmarshal(data, &m) == nil || json.Unmarshal(data, &m) == nil {
				for id, t := range m {
					if validSessionID(id) == nil {
						a.m[id] = t
					}
				}
			}
		}
	}
	for id, t := range a.pending {
		if t.After(a.m[id]) {
			a.m[id] = t
		}
	}
	a.pending = nil
}

// Accessed implements ledger.AccessKeeper.
func (s *Store) Accessed() map[string]time.Time {
	a := s.access
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadLocked()
	return maps.Clone(a.m)
}

// AccessedAt implements ledger.AccessLookup: before the times are read
// whole, from the file by binary search (see accessFile).
func (s *Store) AccessedAt(id string) time.Time {
	a := s.access
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil && a.path != "" {
		if a.file == nil && !a.fileBad {
			a.file, a.fileBad = nil, true
			if f, ok := readAccessFile(a.path); ok {
				a.file, a.fileBad = f, false
			}
		}
		if a.file != nil {
			t, _, ok := a.file.lookup(id)
			if ok {
				if p := a.pending[id]; p.After(t) {
					t = p
				}
				return t
			}
			a.file.close()
			a.file, a.fileBad = nil, true
		}
	}
	a.loadLocked()
	return a.m[id]
}

// RecordAccess implements ledger.AccessKeeper.
func (s *Store) RecordAccess(id string, t time.Time) {
	a := s.access
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		if a.pending == nil {
			a.pending = map[string]time.Time{}
		}
		if t.After(a.pending[id]) {
			a.pending[id] = t.UTC()
			a.dirty = true
		}
		return
	}
	if t.After(a.m[id]) {
		a.m[id] = t.UTC()
		a.dirty = true
	}
}

// save writes the times if they changed since they were read.
func (a *accessTimes) save() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.file.close()
	a.file = nil
	if !a.dirty || a.path == "" {
		return
	}
	a.loadLocked()
	data, err := json.Marshal(a.m)
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(a.path), "accessed-*")
	if err != nil {
		return
	}
	if _, err := tmp.Write(data); err != nil || tmp.Close() != nil {
		os.Remove(tmp.Name())
		return
	}
	if durable.Rename(tmp.Name(), a.path) != nil {
		os.Remove(tmp.Name())
		return
	}
	a.dirty = false
}
