package gitstore

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRefDeletion: a ref update to the zero id deletes the ref through the
// log like any other move: gone from readRef and listRefs at once, gone
// from the disk (loose file and packed-refs) once flushed, seen as gone by
// a second store that only replays the log, a stale old value refused, and
// plain git agrees (for-each-ref, fsck). On both backends.
func TestRefDeletion(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"fs", "memory"} {
		t.Run(kind, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p.git")
			var s *Store
			var err error
			if kind == "fs" {
				s, err = Open(dir, Options{FlushInterval: time.Hour})
			} else {
				s, err = OpenMemory(Options{})
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { s.Close() }()
			tip, err := s.be.ReadRef(ctx, "refs/heads/main")
			if err != nil || tip == zeroHash {
				t.Fatalf("main: %v %v", tip, err)
			}
			packed, loose := divergedPrefix+"origin/sessions/a/main", divergedPrefix+"origin/sessions/b/main"
			if err := s.be.Apply(ctx, &batch{Updates: []refUpdate{{Name: packed, New: tip}}}); err != nil {
				t.Fatal(err)
			}
			if kind == "fs" {
				if err := s.Flush(); err != nil {
					t.Fatal(err)
				}
				if gitInstalled() {
					if out, err := runGit(dir, "pack-refs", "--all"); err != nil {
						t.Fatalf("git pack-refs: %v\n%s", err, out)
					}
				}
			}
			if err := s.be.Apply(ctx, &batch{Updates: []refUpdate{{Name: loose, New: tip}}}); err != nil {
				t.Fatal(err)
			}
			if kind == "fs" {
				if err := s.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			// A stale old value is refused and changes nothing.
			if err := s.be.Apply(ctx, &batch{Updates: []refUpdate{{Name: loose, Old: zeroHash, New: zeroHash}}}); err != errConflict {
				t.Fatalf("delete with a wrong old value: %v, want a conflict", err)
			}
			for _, name := range []string{packed, loose} {
				if err := s.DropDiverged(ctx, name); err != nil {
					t.Fatalf("drop %s: %v", name, err)
				}
			}
			check := func(st *Store, when string) {
				t.Helper()
				for _, name := range []string{packed, loose} {
					if h, err := st.be.ReadRef(ctx, name); err != nil || h != zeroHash {
						t.Errorf("%s: %s reads %v, %v", when, name, h, err)
					}
				}
				if refs, err := st.be.ListRefs(ctx, divergedPrefix); err != nil || len(refs) != 0 {
					t.Errorf("%s: listRefs = %v, %v", when, refs, err)
				}
				if h, _ := st.be.ReadRef(ctx, "refs/heads/main"); h != tip {
					t.Errorf("%s: main moved to %v", when, h)
				}
			}
			check(s, "before the flush")
			if err := s.DropDiverged(ctx, loose); !errors.Is(err, ErrNoKeptChain) {
				t.Errorf("dropping twice: %v", err)
			}
			if kind == "memory" {
				return
			}
			// A second store replays the log, which still holds the deletions.
			s2, err := Open(dir, Options{FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			check(s2, "replayed by a second store")
			s2.Close()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err = Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			check(s, "after the flush")
			if !gitInstalled() {
				return
			}
			if out, _ := runGit(dir, "for-each-ref", "refs/thoughtbox/"); strings.TrimSpace(out) != "" {
				t.Errorf("git still lists deleted refs:\n%s", out)
			}
			if out, err := runGit(dir, "fsck", "--strict"); err != nil {
				t.Errorf("git fsck: %v\n%s", err, out)
			}
		})
	}
}
