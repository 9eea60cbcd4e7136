package gitstore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func accessID(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012d", i*7919, i) }

// TestAccessJournalSurvivesReopen: a close appends the times to the
// journal, without writing accessed.json, and a new store reads them back
// one by one and whole.
func TestAccessJournalSurvivesReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.UTC)
	for i := range 20 {
		s.RecordAccess(accessID(i), base.Add(time.Duration(i)*time.Minute))
	}
	s.RecordAccess(accessID(3), base.Add(-time.Hour)) // earlier: kept out
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tb := filepath.Join(dir, "thoughtbox")
	if _, err := os.Stat(filepath.Join(tb, "accessed.json")); !os.IsNotExist(err) {
		t.Fatalf("accessed.json was written: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(tb, "accessed.log"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != 20 {
		t.Fatalf("the journal has %d lines, want 20:\n%s", n, data)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		want := base.Add(time.Duration(i) * time.Minute)
		if got := s.AccessedAt(accessID(i)); !got.Equal(want) {
			t.Fatalf("%d: %v, want %v", i, got, want)
		}
	}
	all := s.Accessed()
	if len(all) != 20 || !all[accessID(7)].Equal(base.Add(7*time.Minute)) {
		t.Fatalf("Accessed: %d times, %v", len(all), all[accessID(7)])
	}
	// Nothing recorded: nothing appended.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(tb, "accessed.log"))
	if string(again) != string(data) {
		t.Fatal("a store that recorded nothing appended to the journal")
	}
}
