package gitstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestManyFlushesMergeIntoFewPacks writes a long session slowly — a flush
// after every few thoughts, as a real agent's pace gives — and checks that
// packs are merged, that merges link each flush's whole folder tree to the
// next flush's first version (so the repository does not hold one whole
// copy per flush), and that git and the store still read everything.
func TestManyFlushesMergeIntoFewPacks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(dir, Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	w := newSession(t, s, "a1b2c3d4-0000-4000-8000-00000000e0e0")
	const n, every = 1200, 4
	for i := 1; i <= n; i++ {
		w.add("", ledger.ThoughtData{Thought: fmt.Sprintf("thought %d", i), ThoughtNumber: i, NextThoughtNeeded: true}, "")
		if i%every == 0 {
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	packs, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	if len(packs) > pack.MaxPacks+1 {
		t.Errorf("%d packs after %d flushes; merges should keep at most %d", len(packs), n/every, pack.MaxPacks+1)
	}
	var size int64
	for _, p := range packs {
		fi, _ := os.Stat(p)
		size += fi.Size()
	}
	// One whole copy of the folder tree per flush would be 300 flushes ×
	// ~20 KB on average, about 6 MB; linked versions keep it near 1 MB.
	if size > 2<<20 {
		t.Errorf("packs hold %d bytes for %d thoughts; merges did not link versions across flushes", size, n)
	}
	t.Logf("%d thoughts, %d flushes: %d packs, %d bytes", n, n/every, len(packs), size)

	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ss, err := s.LoadSession(context.Background(), w.meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss.Main) != n || !ss.Integrity.Valid {
		t.Fatalf("loaded %d thoughts (valid %v), want %d", len(ss.Main), ss.Integrity.Valid, n)
	}
	for i, th := range ss.Main {
		if want := fmt.Sprintf("thought %d", i+1); th.Data.Thought != want {
			t.Fatalf("thought %d = %q", i+1, th.Data.Thought)
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed; skipping the fsck half")
	}
	gitCLI(t, dir, "fsck", "--strict", "--no-dangling")
	// every version of the folder tree, old ones included, reads back
	log := gitCLI(t, dir, "log", "--format=%H", "sessions/"+w.meta.ID+"/main")
	if got := len(strings.Fields(log)); got != n+1 {
		t.Errorf("git log lists %d commits, want %d", got, n+1)
	}
	gitCLI(t, dir, "rev-list", "--objects", "--all")
}
