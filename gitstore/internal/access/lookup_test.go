package access

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// TestAccessedAtAgreesWithTheWholeFile: the binary search over
// accessed.json finds what decoding it whole finds, and refuses a file it
// cannot search (then the whole file is decoded).
func TestAccessedAtAgreesWithTheWholeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "accessed.json")
	s := New(path)
	base := time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.UTC)
	var ids []string
	for i := range 300 {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012d", i*7919, i)
		ids = append(ids, id)
		s.Record(id, base.Add(time.Duration(i)*time.Minute))
	}
	s.Save()
	s = New(path)
	defer s.Save()
	later := base.Add(time.Hour * 100)
	s.Record(ids[5], later) // recorded before the file is read
	for i, id := range ids {
		want := base.Add(time.Duration(i) * time.Minute)
		if i == 5 {
			want = later
		}
		if got := s.At(id); !got.Equal(want) {
			t.Fatalf("%s: %v, want %v", id, got, want)
		}
	}
	if got := s.At("ffffffff-not-there"); !got.IsZero() {
		t.Fatalf("an unknown id: %v", got)
	}
	if s.m != nil {
		t.Fatal("At decoded the whole file")
	}
	all := s.All()
	for i, id := range ids {
		if !all[id].Equal(s.At(id)) {
			t.Fatalf("entry %d: whole %v, lookup %v", i, all[id], s.At(id))
		}
	}

	odd := filepath.Join(t.TempDir(), "accessed.json")
	for _, bad := range []string{`{"b":"2026-11-24T10:00:00Z","a":"2026-11-24T10:00:00Z"}`, `[1]`, `{"a":1}`, ``} {
		os.WriteFile(odd, []byte(bad), 0o644)
		if _, ok := readAccessFile(odd); ok {
			t.Errorf("%q was taken for a sorted object", bad)
		}
	}
	os.WriteFile(odd, []byte(`{}`), 0o644)
	if f, ok := readAccessFile(odd); !ok || f.size != 2 {
		t.Errorf("an empty object: %v", ok)
	}
}

// TestAccessedAtLargeFile: past accessWhole the file is searched by
// offset, not read whole; every entry is found, and a file whose keys are
// out of order is caught by the search and decoded whole instead.
func TestAccessedAtLargeFile(t *testing.T) {
	base := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	var ids []string
	m := map[string]time.Time{}
	for i := range 3000 {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012d", i*7919, i)
		if i%7 == 0 {
			id += "-x" // entries of different lengths
		}
		ids = append(ids, id)
		m[id] = base.Add(time.Duration(i) * time.Second)
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) <= accessWhole {
		t.Fatalf("the file is %d bytes, not past accessWhole", len(data))
	}
	path := filepath.Join(t.TempDir(), "accessed.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s := New(path)
	for _, id := range ids {
		if got := s.At(id); !got.Equal(m[id]) {
			t.Fatalf("%s: %v, want %v", id, got, m[id])
		}
	}
	for _, id := range []string{"0", "00000000-0000", "zzzz", ids[3] + "0"} {
		if got := s.At(id); !got.IsZero() {
			t.Fatalf("an unknown id %s: %v", id, got)
		}
	}
	if s.m != nil {
		t.Fatal("At decoded the whole file")
	}
	if len(ids) <= accessReadAll || s.file.data == nil {
		t.Fatal("the lookups never switched to the file read whole")
	}
	s.Save()

	// The same entries in reverse order: the first steps of any search
	// meet keys on the wrong side. (A single key out of place where no
	// search looks is not noticed; encoding/json writes the file sorted.)
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	var rev bytes.Buffer
	rev.WriteByte('{')
	for i := len(sorted) - 1; i >= 0; i-- {
		fmt.Fprintf(&rev, "%q:%q", sorted[i], m[sorted[i]].Format(time.RFC3339Nano))
		if i > 0 {
			rev.WriteByte(',')
		}
	}
	rev.WriteByte('}')
	if err := os.WriteFile(path, rev.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	s = New(path)
	defer s.Save()
	if got := s.At(sorted[1]); !got.Equal(m[sorted[1]]) {
		t.Fatalf("a file out of order: %v, want %v (from the whole file)", got, m[sorted[1]])
	}
	if s.m == nil {
		t.Fatal("a file out of order was still searched")
	}
}
