// Package access keeps sessions' lastAccessedAt beside the repository:
// reading a session is not a change to it, so it is no commit, but the
// time should outlive the process. With in-memory storage the times live
// in memory only.
//
// On disk the times are in two places. thoughtbox/accessed.json holds
// every session's time, one sorted JSON object (accessFile bisects it).
// thoughtbox/accessed.log is a journal: at close a process appends the
// times it recorded, one "id time" line each, in one write. Rewriting
// accessed.json at every close made reading one session of a large
// ledger cost what the whole ledger's times cost (7 MB read, decoded,
// encoded and written for 100,000 sessions), and two processes closing
// together lost each other's times. A time is the later of the two
// places. When the journal outgrows accessJournalBound the process that
// appended folds it into accessed.json (fold). Nothing is synced: a
// crash loses recent accesses, nothing else.
//
// Lock order: Times.mu guards a Times whole, its files' reads and writes
// included; a fold takes the inter-process lock accessed.lock (never
// waiting for it) under Times.mu.
package access

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// Times keeps the sessions' access times of one repository.
type Times struct {
	path string // accessed.json; "" for memory only
	mu   sync.Mutex
	// m holds every time once read whole (the file, the journal and
	// recorded); nil until then.
	m map[string]time.Time
	// recorded holds the accesses of this process not yet appended: a
	// writer need not read every session's time (a large file on a
	// large ledger) to record one.
	recorded map[string]time.Time
	// file indexes the file for At until m is read; fileBad says
	// it could not be (then m is read). journal is what the journal held
	// when file was opened.
	file    *accessFile
	fileBad bool
	journal map[string]time.Time
}

// New returns the times kept in the file at path (accessed.json; its
// journal is beside it), or in memory only when path is "". Nothing is
// read until a time is asked for.
func New(path string) *Times { return &Times{path: path} }

// accessJournalBound is the journal's size, in bytes, past which it is
// folded into an accessed.json of fileSize bytes. Every reader reads the
// journal whole (measured: 11 ns a byte, a line is about 68 bytes) and a
// fold decodes, encodes and rewrites the whole file (87 ns a byte). For
// a command that records one access, reading costs 11·B/2 ns on average
// and folding 87·68·S/B ns, for a bound of B and a file of S bytes; the
// sum is least near B = √(1024·S). So the bound grows with the square
// root of the file: 86 KB for 100,000 sessions (7.2 MB), where a reader
// pays at most 1 ms for the journal and a fold comes every 1,300
// accesses. It is never below 64 KB: below that both costs are too small
// to matter.
func accessJournalBound(fileSize int64) int64 {
	return max(64<<10, int64(math.Sqrt(1024*float64(fileSize))))
}

// accessHook, when a test sets it, is called at the points where another
// process's save may run: "opened" (the journal open, not yet written)
// and "merged" (a fold's new file made, not yet in place).
var accessHook func(stage string)

func (a *Times) journalPath() string {
	return strings.TrimSuffix(a.path, ".json") + ".log"
}

// foldingPath is where a fold moves the journal before reading it, so
// that appends made meanwhile start a new journal.
func (a *Times) foldingPath() string { return a.journalPath() + ".fold" }

// readJournals returns the times in the journal and in a journal being
// folded. They are read before accessed.json: a fold moves the journal
// aside, then replaces accessed.json, then removes what it moved, so a
// time missed in one place is found in the next.
func (a *Times) readJournals() map[string]time.Time {
	m := map[string]time.Time{}
	for _, p := range []string{a.journalPath(), a.foldingPath()} {
		if data, err := os.ReadFile(p); err == nil {
			parseAccessJournal(data, m)
		}
	}
	return m
}

// parseAccessJournal adds the journal's lines to m, keeping the later
// time. A line that does not end in a newline (a write cut short) or does
// not parse is skipped, as is an id that is no session id.
func parseAccessJournal(data []byte, m map[string]time.Time) {
	for {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return
		}
		line := data[:nl]
		data = data[nl+1:]
		sp := bytes.IndexByte(line, ' ')
		if sp < 0 || !accessKeyOK(line[:sp]) {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, string(line[sp+1:]))
		if err != nil {
			continue
		}
		if id := string(line[:sp]); t.After(m[id]) {
			m[id] = t
		}
	}
}

// readAccessJSON decodes accessed.json whole; a file that is missing or
// does not decode counts as empty.
func readAccessJSON(path string) map[string]time.Time {
	out := map[string]time.Time{}
	data, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	var m map[string]time.Time
	// The fast decoder: on a large ledger this file holds every
	// session's time, and a listing's first page waits for it.
	if fastjson.Unmarshal(data, &m) == nil || json.Unmarshal(data, &m) == nil {
		for id, t := range m {
			if accessKeyOK(id) {
				out[id] = t
			}
		}
	}
	return out
}

// mergeLater copies src's times into dst where they are later.
func mergeLater(dst, src map[string]time.Time) {
	for id, t := range src {
		if t.After(dst[id]) {
			dst[id] = t
		}
	}
}

func (a *Times) loadLocked() {
	if a.m != nil {
		return
	}
	if a.path == "" {
		a.m = map[string]time.Time{}
	} else {
		j := a.readJournals()
		a.m = readAccessJSON(a.path)
		mergeLater(a.m, j)
	}
	mergeLater(a.m, a.recorded)
}

// All returns every session's time.
func (a *Times) All() map[string]time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.loadLocked()
	return maps.Clone(a.m)
}

// At returns one session's time (zero when none is known): before the
// times are read whole, from the file by binary search (see accessFile)
// and the journal.
func (a *Times) At(id string) time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil && a.path != "" {
		if a.file == nil && !a.fileBad {
			a.journal = a.readJournals()
			a.file, a.fileBad = nil, true
			if f, ok := readAccessFile(a.path); ok {
				a.file, a.fileBad = f, false
			}
		}
		if a.file != nil {
			t, _, ok := a.file.lookup(id)
			if ok {
				for _, o := range []time.Time{a.journal[id], a.recorded[id]} {
					if o.After(t) {
						t = o
					}
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

// Record sets a session's time to t, unless it is already later.
func (a *Times) Record(id string, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	t = t.UTC()
	if a.m != nil {
		if !t.After(a.m[id]) {
			return
		}
		a.m[id] = t
	}
	if a.path == "" {
		if a.m == nil {
			a.m = map[string]time.Time{id: t}
		}
		return
	}
	if a.recorded == nil {
		a.recorded = map[string]time.Time{}
	}
	if t.After(a.recorded[id]) {
		a.recorded[id] = t
	}
}

// Save appends the times recorded since the last save to the journal,
// and folds the journal into accessed.json once it is past its bound.
// The store saves when it closes.
func (a *Times) Save() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.file.close()
	a.file, a.journal = nil, nil
	if len(a.recorded) == 0 || a.path == "" {
		return
	}
	var buf []byte
	for _, id := range slices.Sorted(maps.Keys(a.recorded)) {
		buf = append(buf, id...)
		buf = append(buf, ' ')
		buf = a.recorded[id].AppendFormat(buf, time.RFC3339Nano)
		buf = append(buf, '\n')
	}
	size, err := appendAccessJournal(a.journalPath(), buf)
	if err != nil {
		return
	}
	a.recorded = nil
	if size <= accessJournalBound(0) {
		return
	}
	if fi, err := os.Stat(a.path); err == nil && size <= accessJournalBound(fi.Size()) {
		return
	}
	a.fold()
}

// appendAccessJournal appends data to the journal at path in one write
// (O_APPEND: writes of two processes do not interleave) and returns the
// journal's size after it. A fold may have moved the journal aside and
// read it between our open and our write; the path then names another
// file, or none, and data is written again to what it names now (a line
// read twice is harmless).
func appendAccessJournal(path string, data []byte) (int64, error) {
	for range 3 {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return 0, err
		}
		if accessHook != nil {
			accessHook("opened")
		}
		_, err = f.Write(data)
		fi, serr := f.Stat()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = serr
		}
		if err != nil {
			return 0, err
		}
		if now, err := os.Stat(path); err == nil && os.SameFile(fi, now) {
			return fi.Size(), nil
		}
	}
	return 0, errors.New("access journal: moved aside at every attempt")
}

// fold merges the journal into accessed.json and removes it. One process
// folds at a time (a lock file; a process that finds it taken leaves the
// fold to the holder). The journal is first renamed aside, so that
// processes appending meanwhile create a new one rather than write into
// a file about to be removed; one that did write into it sees the rename
// and writes again (appendAccessJournal). A journal left aside by a
// fold that did not finish is folded first.
func (a *Times) fold() {
	lf, err := durable.OpenFile(filepath.Join(filepath.Dir(a.path), "accessed.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer lf.Close()
	if ok, err := durable.TryLock(lf, nil); !ok || err != nil {
		return
	}
	defer durable.Unlock(lf)
	folding := a.foldingPath()
	for range 2 {
		_, err := os.Stat(folding)
		leftover := err == nil
		if !leftover && durable.Rename(a.journalPath(), folding) != nil {
			return
		}
		data, err := os.ReadFile(folding)
		if err != nil {
			return
		}
		m := readAccessJSON(a.path)
		parseAccessJournal(data, m)
		if accessHook != nil {
			accessHook("merged")
		}
		if writeAccessJSON(a.path, m) != nil {
			return
		}
		os.Remove(folding)
		if !leftover {
			return
		}
	}
}

// writeAccessJSON replaces accessed.json with m, written aside first so
// that readers see the old file or the new one whole.
func writeAccessJSON(path string, m map[string]time.Time) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "accessed-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = durable.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
