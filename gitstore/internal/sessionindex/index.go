package sessionindex

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Index is the segment files in one directory, or the same segments
// held in memory.
type Index struct {
	dir string
	// mu keeps this process's writers of segments from merging the same
	// ones twice; other processes may, harmlessly.
	mu sync.Mutex
	// memMu guards mem and seq: the segments of an index kept in memory
	// (mem nil on disk), by name, and the number in the last one's name.
	// A view shares them (they never change) while a merge replaces them.
	memMu sync.Mutex
	mem   map[string]*segment
	seq   int
}

// Open returns the index kept in dir (created when first written).
func Open(dir string) *Index { return &Index{dir: dir} }

// OpenMemory returns an index that keeps its segments in memory, for a
// repository that writes no files: records, matching against the
// caller's sessions, merging and search are those of an index on disk;
// only the listing (see WriteListing) is never kept.
func OpenMemory() *Index { return &Index{mem: map[string]*segment{}} }

// Dir is where the segments are ("" in memory).
func (x *Index) Dir() string { return x.dir }

// Drop forgets every segment and the listing, so that every session is
// read again: what deleting the directory does, for an index in memory
// too.
func (x *Index) Drop() error {
	if x.mem != nil {
		x.memMu.Lock()
		clear(x.mem)
		x.memMu.Unlock()
		return nil
	}
	return os.RemoveAll(x.dir)
}

// remove forgets the segment called name.
func (x *Index) remove(name string) {
	if name == "" {
		return
	}
	if x.mem != nil {
		x.memMu.Lock()
		delete(x.mem, name)
		x.memMu.Unlock()
		return
	}
	os.Remove(filepath.Join(x.dir, name))
}

// Current is one session as the repository holds it now.
type Current struct {
	ID  string
	Key Key
}

// View is the index read against the repository's sessions at one moment:
// it answers only for sessions whose record has the key they have now.
type View struct {
	x    *Index
	cur  []Current // sorted by id
	segs []*segment
	best []loc // per current session: its record, seg -1 when none
	// back maps, per segment, each doc to the current session it is the
	// record of, or -1 (outdated, superseded or gone).
	back [][]int32
}

type loc struct{ seg, doc int32 }

// maxSegments is how many segments a view keeps before merging.
const maxSegments = 8

const segSuffix = ".seg"

// View reads the index for cur, which must be sorted by id without
// repeats. Damaged segment files are deleted: their sessions are missing
// from the view, as if never indexed.
func (x *Index) View(cur []Current) (*View, error) {
	if !slices.IsSortedFunc(cur, func(a, b Current) int { return strings.Compare(a.ID, b.ID) }) {
		return nil, errors.New("sessionindex: sessions not sorted by id")
	}
	v := &View{x: x, cur: cur}
	segs, err := x.load()
	if err != nil {
		return nil, err
	}
	v.segs = segs
	v.rematch()
	return v, nil
}

// load reads every segment file. A file merged away between listing and
// reading makes it list again: the merged segment holds its records.
func (x *Index) load() ([]*segment, error) {
	if x.mem != nil {
		x.memMu.Lock()
		segs := make([]*segment, 0, len(x.mem))
		for _, s := range x.mem {
			segs = append(segs, s)
		}
		x.memMu.Unlock()
		// In the order they were made, as a directory lists files by name.
		slices.SortFunc(segs, func(a, b *segment) int { return strings.Compare(a.name, b.name) })
		return segs, nil
	}
	for attempt := 0; ; attempt++ {
		entries, err := os.ReadDir(x.dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var segs []*segment
		vanished := false
		for _, e := range entries {
			name := e.Name()
			path := filepath.Join(x.dir, name)
			if strings.HasSuffix(name, ".tmp") {
				// A writer killed mid-segment; a live one renames within
				// moments.
				if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 10*time.Minute {
					os.Remove(path)
				}
				continue
			}
			if !strings.HasSuffix(name, segSuffix) {
				continue
			}
			s, err := openSegment(path)
			if errors.Is(err, fs.ErrNotExist) {
				vanished = true
				continue
			}
			if err != nil && !errors.Is(err, errDamaged) {
				for _, s := range segs {
					s.close()
				}
				return nil, err
			}
			if err != nil {
				// Cut short by a crash, or damaged: derived data, so it
				// goes, and its sessions are read again.
				os.Remove(path)
				continue
			}
			s.name = name
			segs = append(segs, s)
		}
		if !vanished || attempt == 2 {
			return segs, nil
		}
		for _, s := range segs {
			s.close()
		}
	}
}

func (v *View) rematch() {
	v.best = make([]loc, len(v.cur))
	for i := range v.best {
		v.best[i] = loc{-1, -1}
	}
	v.back = make([][]int32, len(v.segs))
	for si := range v.segs {
		v.matchSegment(si)
	}
}

// matchSegment makes segment si's records the current ones where they
// match and are better than what is there: a record with words beats one
// without.
func (v *View) matchSegment(si int) {
	s := v.segs[si]
	back := make([]int32, len(s.docs))
	for i := range back {
		back[i] = -1
	}
	v.back[si] = back
	ci := 0
	for di := range s.docs {
		d := &s.docs[di]
		if len(s.docs) < len(v.cur)/64 {
			// A small segment against many sessions: search.
			ci = sort.Search(len(v.cur), func(i int) bool { return v.cur[i].ID >= string(d.id) })
		} else {
			for ci < len(v.cur) && v.cur[ci].ID < string(d.id) {
				ci++
			}
		}
		if ci == len(v.cur) {
			if len(s.docs) >= len(v.cur)/64 {
				break
			}
			continue
		}
		if v.cur[ci].ID != string(d.id) || v.cur[ci].Key != d.key {
			continue
		}
		b := v.best[ci]
		if b.seg >= 0 && (d.flags&flagTerms == 0 || v.segs[b.seg].docs[b.doc].flags&flagTerms != 0) {
			continue
		}
		if b.seg >= 0 {
			v.back[b.seg][b.doc] = -1
		}
		v.best[ci] = loc{int32(si), int32(di)}
		back[di] = int32(ci)
	}
}

// Len is the number of current sessions.
func (v *View) Len() int { return len(v.cur) }

// Current returns the i-th current session.
func (v *View) Current(i int) Current { return v.cur[i] }

// Missing lists the current sessions the index has no record of; with
// words, also those whose record was made for listing only.
func (v *View) Missing(words bool) []int {
	var out []int
	for i, b := range v.best {
		if b.seg < 0 || words && v.segs[b.seg].docs[b.doc].flags&flagTerms == 0 {
			out = append(out, i)
		}
	}
	return out
}

// UpdatedAt returns the updatedAt of session i as Unix nanoseconds, for
// ordering; false when it has no record.
func (v *View) UpdatedAt(i int) (int64, bool) {
	b := v.best[i]
	if b.seg < 0 {
		return 0, false
	}
	return v.segs[b.seg].docs[b.doc].updated, true
}

// Summary returns session i's summary (its id is Current(i).ID); false
// when it has no record.
func (v *View) Summary(i int) (Summary, bool) {
	b := v.best[i]
	if b.seg < 0 {
		return Summary{}, false
	}
	s, err := decodeSummary(v.segs[b.seg].docs[b.doc].sum)
	return s, err == nil
}

// Hit is a session that holds every word of a query.
type Hit struct {
	Session int    // index of the current session
	Terms   []Term // per word of the query
}

// ErrLost says a segment turned out damaged while answering: it was
// deleted, and the sessions it held must be read again (Missing) before
// asking again.
var ErrLost = errors.New("sessionindex: a damaged segment was dropped")

// Find returns the current sessions whose records hold every one of
// words, by session index. It reads only those words' postings.
func (v *View) Find(words []string) ([]Hit, error) {
	var acc map[int32][]Term
	for wi, w := range words {
		next := map[int32][]Term{}
		for si, s := range v.segs {
			ps, err := s.lookup(w)
			if err != nil {
				v.drop(si)
				return nil, ErrLost
			}
			for _, p := range ps {
				ci := v.back[si][p.doc]
				if ci < 0 {
					continue
				}
				t := Term{Fields: p.fields, Count: p.count}
				if wi == 0 {
					ts := make([]Term, len(words))
					ts[0] = t
					next[ci] = ts
				} else if ts, ok := acc[ci]; ok {
					ts[wi] = t
					next[ci] = ts
				}
			}
		}
		acc = next
		if len(acc) == 0 {
			break
		}
	}
	out := make([]Hit, 0, len(acc))
	for ci, ts := range acc {
		out = append(out, Hit{Session: int(ci), Terms: ts})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Session < out[j].Session })
	return out, nil
}

// Close releases the segment files the view holds open.
func (v *View) Close() {
	for _, s := range v.segs {
		s.close()
	}
	v.segs = nil
}

// drop deletes a damaged segment and forgets its records.
func (v *View) drop(si int) {
	v.x.remove(v.segs[si].name)
	v.segs[si].close()
	v.segs = slices.Delete(v.segs, si, si+1)
	v.rematch()
}

// Add records docs (read from the repository for current sessions) in a
// new segment, writes it and merges segments when there are too many.
// The view answers for them at once; failing to write (a read-only
// repository) only means the next process reads them again.
func (v *View) Add(docs []Doc) error {
	if len(docs) == 0 {
		return nil
	}
	docs = slices.Clone(docs)
	slices.SortStableFunc(docs, func(a, b Doc) int { return strings.Compare(a.ID, b.ID) })
	// The last record of an id wins.
	uniq := docs[:0]
	for i, d := range docs {
		if i+1 < len(docs) && docs[i+1].ID == d.ID {
			continue
		}
		uniq = append(uniq, d)
	}
	enc := make([]encDoc, len(uniq))
	terms := map[string][]posting{}
	for i, d := range uniq {
		enc[i] = encDoc{id: d.ID, key: d.Key, updated: updatedKey(d.Summary.UpdatedAt), sum: encodeSummary(d.Summary)}
		if d.Terms != nil {
			enc[i].flags = flagTerms
			for w, t := range d.Terms {
				terms[w] = append(terms[w], posting{doc: uint32(i), fields: t.Fields, count: t.Count})
			}
		}
	}
	s, err := parse(encode(enc, terms))
	if err != nil {
		return fmt.Errorf("sessionindex: new segment does not read back: %w", err)
	}
	v.x.mu.Lock()
	defer v.x.mu.Unlock()
	err = v.x.write(s)
	v.segs = append(v.segs, s)
	v.back = append(v.back, nil)
	v.matchSegment(len(v.segs) - 1)
	if err == nil {
		err = v.compact()
	}
	return err
}

// write puts a segment in a file of its own: written under a temporary
// name and renamed, so a reader never meets half of one. Not synced: a
// segment lost or cut short by a crash is dropped and rebuilt. In memory,
// the segment itself is kept.
func (x *Index) write(s *segment) error {
	if x.mem != nil {
		x.memMu.Lock()
		x.seq++
		s.name = fmt.Sprintf("seg-%09d%s", x.seq, segSuffix)
		x.mem[s.name] = s
		x.memMu.Unlock()
		return nil
	}
	if err := os.MkdirAll(x.dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(x.dir, "seg-*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(s.data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	name := strings.TrimSuffix(filepath.Base(f.Name()), ".tmp") + segSuffix
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(x.dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	s.name = name
	return nil
}

// compact merges segments when there are more than maxSegments, or when
// most records no longer match: the small ones together while they add up
// to less than half the largest, else all, so that each record is
// rewritten a number of times that grows with the logarithm of the
// ledger, not with the number of updates.
func (v *View) compact() error {
	live := make([]int, len(v.segs))
	total, garbage := 0, 0
	for si, back := range v.back {
		for _, c := range back {
			if c >= 0 {
				live[si]++
			} else {
				garbage++
			}
		}
		total += live[si]
	}
	if len(v.segs) <= maxSegments && garbage <= total+1024 {
		return nil
	}
	largest := 0
	for si := range v.segs {
		if live[si] > live[largest] {
			largest = si
		}
	}
	var merge []int
	large := v.segs[largest]
	if total-live[largest] < live[largest]/2 && len(large.docs)-live[largest] < live[largest]/2 && len(v.segs) > maxSegments {
		for si := range v.segs {
			if si != largest {
				merge = append(merge, si)
			}
		}
	} else {
		for si := range v.segs {
			merge = append(merge, si)
		}
	}
	return v.merge(merge)
}

// merge replaces the segments at idx with one holding their current
// records.
func (v *View) merge(idx []int) error {
	type src struct{ seg, doc int32 }
	var recs []src
	for _, si := range idx {
		for di, c := range v.back[si] {
			if c >= 0 {
				recs = append(recs, src{int32(si), int32(di)})
			}
		}
	}
	sort.Slice(recs, func(i, j int) bool {
		return v.back[recs[i].seg][recs[i].doc] < v.back[recs[j].seg][recs[j].doc]
	})
	newIdx := make(map[src]uint32, len(recs))
	enc := make([]encDoc, len(recs))
	for i, r := range recs {
		d := v.segs[r.seg].docs[r.doc]
		enc[i] = encDoc{id: string(d.id), key: d.key, flags: d.flags, updated: d.updated, sum: d.sum}
		newIdx[r] = uint32(i)
	}
	terms := map[string][]posting{}
	for _, si := range idx {
		err := v.segs[si].eachWord(func(w string, ps []posting) {
			for _, p := range ps {
				if n, ok := newIdx[src{int32(si), int32(p.doc)}]; ok {
					terms[w] = append(terms[w], posting{doc: n, fields: p.fields, count: p.count})
				}
			}
		})
		if err != nil {
			v.drop(si)
			return ErrLost
		}
	}
	for _, ps := range terms {
		if !sort.SliceIsSorted(ps, func(i, j int) bool { return ps[i].doc < ps[j].doc }) {
			sort.Slice(ps, func(i, j int) bool { return ps[i].doc < ps[j].doc })
		}
	}
	s, err := parse(encode(enc, terms))
	if err != nil {
		return fmt.Errorf("sessionindex: merged segment does not read back: %w", err)
	}
	if err := v.x.write(s); err != nil {
		return err
	}
	gone := map[int]bool{}
	for _, si := range idx {
		gone[si] = true
		v.x.remove(v.segs[si].name)
		v.segs[si].close()
	}
	keep := []*segment{}
	for si, seg := range v.segs {
		if !gone[si] {
			keep = append(keep, seg)
		}
	}
	v.segs = append(keep, s)
	v.rematch()
	return nil
}

// Segments is the number of segments the view holds (for tests).
func (v *View) Segments() int { return len(v.segs) }
