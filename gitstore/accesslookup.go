package gitstore

import (
	"bytes"
	"os"
	"sort"
	"time"
)

// accessFile answers for one session's access time from thoughtbox/
// accessed.json without decoding every session's: the file is a JSON
// object written by encoding/json, whose keys are sorted, so a key is
// found by binary search over where the entries start. A page of
// sessions needs a page of times; decoding the hundred thousand of a
// large ledger cost more than the rest of the page.
type accessFile struct {
	data   []byte
	starts []int // offset of each entry's opening quote
}

// readAccessFile indexes the file; ok is false when it is not the simple,
// sorted object expected (then the caller decodes it whole).
func readAccessFile(path string) (*accessFile, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return &accessFile{}, os.IsNotExist(err)
	}
	data = bytes.TrimSpace(data)
	if len(data) < 2 || data[0] != '{' || data[len(data)-1] != '}' {
		return nil, false
	}
	f := &accessFile{data: data}
	if len(data) == 2 {
		return f, true
	}
	f.starts = make([]int, 0, bytes.Count(data, []byte(`,"`))+1)
	for i := 1; i < len(data)-1; {
		if data[i] != '"' {
			return nil, false
		}
		f.starts = append(f.starts, i)
		// "id":"time", — neither holds a quote or a comma.
		j := bytes.IndexByte(data[i:], ',')
		if j < 0 {
			break
		}
		i += j + 1
	}
	prev := []byte(nil)
	for k := range f.starts {
		key, _, ok := f.entry(k)
		if !ok || prev != nil && bytes.Compare(prev, key) >= 0 {
			return nil, false
		}
		prev = key
	}
	return f, true
}

// entry returns the key and value of entry k.
func (f *accessFile) entry(k int) (key, val []byte, ok bool) {
	rest := f.data[f.starts[k]+1:]
	q := bytes.IndexByte(rest, '"')
	if q < 0 || len(rest) < q+4 || rest[q+1] != ':' || rest[q+2] != '"' {
		return nil, nil, false
	}
	key, rest = rest[:q], rest[q+3:]
	e := bytes.IndexByte(rest, '"')
	if e < 0 {
		return nil, nil, false
	}
	return key, rest[:e], true
}

// lookup returns the time recorded for id.
func (f *accessFile) lookup(id string) (time.Time, bool) {
	k := sort.Search(len(f.starts), func(k int) bool {
		key, _, _ := f.entry(k)
		return string(key) >= id
	})
	if k == len(f.starts) {
		return time.Time{}, false
	}
	key, val, ok := f.entry(k)
	if !ok || string(key) != id {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(val))
	return t, err == nil
}
