package access

import (
	"bytes"
	"io"
	"os"
	"sort"
	"time"
)

// accessFile answers for one session's access time from thoughtbox/
// accessed.json without reading every session's: the file is a JSON
// object written by encoding/json, whose keys are sorted, so a key is
// found by binary search over byte offsets, each step reading a small
// window at that offset. A page of sessions needs a page of times; on a
// large ledger reading and checking the whole file (7 MB for 100,000
// sessions) cost more than the rest of the page.
type accessFile struct {
	r      io.ReaderAt
	data   []byte // the whole file, once read (then r is not used)
	starts []int  // with data: the offset of each entry's opening quote
	size   int64
	f      *os.File // the open file behind r, when it is one; closed by close
	// lookups counts searches by offset: past accessReadAll of them (a
	// listing of every session) the file is read whole once, as a few
	// reads per session would cost more than that.
	lookups int
	buf     []byte // a step's window (lookups are made under Times.mu)
}

// accessReadAll is how many lookups are made with small reads before the
// file is read whole.
const accessReadAll = 256

// accessWhole is the size up to which the file is read whole and checked
// entry by entry: cheap there, and it keeps a small file from being
// trusted on its shape alone.
const accessWhole = 64 << 10

// accessWindow bounds what one step reads: an entry is a key of at most
// 128 characters and a time of at most 35, with quotes and separators.
const accessWindow = 512

// readAccessFile opens the file for lookups; ok is false when it is not
// the simple, sorted object expected (then the caller decodes it whole).
func readAccessFile(path string) (*accessFile, bool) {
	f, err := os.Open(path)
	if err != nil {
		return &accessFile{}, os.IsNotExist(err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false
	}
	if fi.Size() <= accessWhole {
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, false
		}
		af := &accessFile{data: bytes.TrimSpace(data)}
		if !af.index() {
			return nil, false
		}
		return af, true
	}
	af := &accessFile{r: f, size: fi.Size(), f: f}
	var ends [2]byte
	if _, err := f.ReadAt(ends[:1], 0); err != nil || ends[0] != '{' {
		f.Close()
		return nil, false
	}
	if _, err := f.ReadAt(ends[1:], fi.Size()-1); err != nil || ends[1] != '}' {
		f.Close()
		return nil, false
	}
	return af, true
}

// index finds where data's entries start and checks them: an object of
// "id":"time" entries with strictly increasing keys.
func (f *accessFile) index() bool {
	data := f.data
	f.size = int64(len(data))
	if len(data) < 2 || data[0] != '{' || data[len(data)-1] != '}' {
		return false
	}
	f.starts = make([]int, 0, bytes.Count(data, []byte(`,"`))+1)
	var prev []byte
	for i := 1; i < len(data)-1; {
		key, _, next, ok := parseAccessEntry(data[i:])
		if !ok || !accessKeyOK(key) || prev != nil && bytes.Compare(prev, key) >= 0 {
			return false
		}
		f.starts = append(f.starts, i)
		prev = key
		i += next
	}
	return true
}

// lookupIndexed is lookup over data and starts.
func (f *accessFile) lookupIndexed(id string) (time.Time, bool) {
	k := sort.Search(len(f.starts), func(k int) bool {
		key, _, _, _ := parseAccessEntry(f.data[f.starts[k]:])
		return string(key) >= id
	})
	if k == len(f.starts) {
		return time.Time{}, false
	}
	key, val, _, _ := parseAccessEntry(f.data[f.starts[k]:])
	if string(key) != id {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(val))
	return t, err == nil
}

// parseAccessEntry parses "key":"val" at the start of b, followed by a
// comma or the closing brace; next is the offset just past the comma (or
// at the brace).
func parseAccessEntry(b []byte) (key, val []byte, next int, ok bool) {
	if len(b) < 1 || b[0] != '"' {
		return nil, nil, 0, false
	}
	q := bytes.IndexByte(b[1:], '"')
	if q < 0 || len(b) < q+5 || b[q+2] != ':' || b[q+3] != '"' {
		return nil, nil, 0, false
	}
	key = b[1 : q+1]
	rest := b[q+4:]
	e := bytes.IndexByte(rest, '"')
	if e < 0 || e+1 >= len(rest) {
		return nil, nil, 0, false
	}
	val = rest[:e]
	end := q + 4 + e + 1
	switch b[end] {
	case ',':
		next = end + 1
	case '}':
		next = end
	default:
		return nil, nil, 0, false
	}
	return key, val, next, true
}

// entryFrom returns the first entry starting at or after pos (1 ≤ pos <
// size-1); last is true when there is none. ok is false when what is
// read there is not an entry.
func (f *accessFile) entryFrom(pos int64, buf []byte) (key, val []byte, last, ok bool) {
	n, err := f.r.ReadAt(buf, pos-1)
	if err != nil && err != io.EOF {
		return nil, nil, false, false
	}
	b := buf[:n]
	start := 1
	if pos > 1 {
		// "id":"time", — neither holds a quote or a comma, so the entry
		// starts after the first comma from pos-1 on.
		c := bytes.IndexAny(b, ",}")
		if c < 0 {
			return nil, nil, false, false
		}
		if b[c] == '}' {
			return nil, nil, pos-1+int64(c) == f.size-1, pos-1+int64(c) == f.size-1
		}
		start = c + 1
	}
	key, val, _, ok = parseAccessEntry(b[start:])
	return key, val, false, ok && accessKeyOK(key)
}

// lookup returns the time recorded for id; ok is false when the file
// turned out not to be what readAccessFile took it for (keys out of
// order, an entry that does not parse): then the caller decodes it whole.
func (f *accessFile) lookup(id string) (t time.Time, found, ok bool) {
	if f.size <= 2 {
		return time.Time{}, false, true
	}
	if f.data == nil {
		if f.lookups++; f.lookups > accessReadAll {
			data := make([]byte, f.size)
			_, err := f.r.ReadAt(data, 0)
			f.close()
			f.data = bytes.TrimSpace(data)
			if err != nil || !f.index() {
				return time.Time{}, false, false
			}
		}
	}
	if f.data != nil {
		t, found := f.lookupIndexed(id)
		return t, found, true
	}
	if f.buf == nil {
		f.buf = make([]byte, 2*accessWindow)
	}
	buf := f.buf
	bad := false
	// Keys seen on either side of the boundary: probes at larger offsets
	// must not find smaller keys (a cheap check of the order, since the
	// file is not read whole).
	var below, above []byte
	k := sort.Search(int(f.size-2), func(i int) bool {
		if bad {
			return true
		}
		key, _, last, good := f.entryFrom(int64(i)+1, buf)
		if !good {
			bad = true
			return true
		}
		if last {
			return true
		}
		if below != nil && bytes.Compare(key, below) < 0 || above != nil && bytes.Compare(key, above) > 0 {
			bad = true
			return true
		}
		if string(key) >= id {
			above = append(above[:0], key...)
			return true
		}
		below = append(below[:0], key...)
		return false
	})
	if bad {
		return time.Time{}, false, false
	}
	if int64(k) >= f.size-2 {
		return time.Time{}, false, true
	}
	key, val, last, good := f.entryFrom(int64(k)+1, buf)
	if !good {
		return time.Time{}, false, false
	}
	if last || string(key) != id {
		return time.Time{}, false, true
	}
	t, err := time.Parse(time.RFC3339Nano, string(val))
	if err != nil {
		return time.Time{}, false, false
	}
	return t, true, true
}

// close releases the file, if one is held open.
func (f *accessFile) close() {
	if f != nil && f.f != nil {
		f.f.Close()
		f.f = nil
	}
}

// accessKeyOK is the store's rule for a session id (lowercase letters,
// digits and hyphens, at most 128), for a key read as bytes or as a
// string, without a string per key.
func accessKeyOK[K string | []byte](key K) bool {
	if len(key) == 0 || len(key) > 128 {
		return false
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
