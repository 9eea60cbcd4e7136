package gitstore

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAccessedAtAgreesWithTheWholeFile: the binary search over
// accessed.json finds what decoding it whole finds, and refuses a file it
// cannot search (then the whole file is decoded).
func TestAccessedAtAgreesWithTheWholeFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.UTC)
	var ids []string
	for i := range 300 {
		id := fmt.Sprintf("%08x-0000-4000-8000-%012d", i*7919, i)
		ids = append(ids, id)
		s.RecordAccess(id, base.Add(time.Duration(i)*time.Minute))
	}
	s.Close()
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	later := base.Add(time.Hour * 100)
	s.RecordAccess(ids[5], later) // recorded before the file is read
	for i, id := range ids {
		want := base.Add(time.Duration(i) * time.Minute)
		if i == 5 {
			want = later
		}
		if got := s.AccessedAt(id); !got.Equal(want) {
			t.Fatalf("%s: %v, want %v", id, got, want)
		}
	}
	if got := s.AccessedAt("ffffffff-not-there"); !got.IsZero() {
		t.Fatalf("an unknown id: %v", got)
	}
	if s.access.m != nil {
		t.Fatal("AccessedAt decoded the whole file")
	}
	all := s.Accessed()
	for i, id := range ids {
		if !all[id].Equal(s.AccessedAt(id)) {
			t.Fatalf("entry %d: whole %v, lookup %v", i, all[id], s.AccessedAt(id))
		}
	}

	path := filepath.Join(t.TempDir(), "accessed.json")
	for _, bad := range []string{`{"b":"2026-11-24T10:00:00Z","a":"2026-11-24T10:00:00Z"}`, `[1]`, `{"a":1}`, ``} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, ok := readAccessFile(path); ok {
			t.Errorf("%q was taken for a sorted object", bad)
		}
	}
	os.WriteFile(path, []byte(`{}`), 0o644)
	if f, ok := readAccessFile(path); !ok || len(f.starts) != 0 {
		t.Errorf("an empty object: %v", ok)
	}
}
