package gitstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/repo"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// writeVerifySession writes a session with every kind of commit the store
// makes: thoughts, a branch, a revision, critiques on both chains.
func writeVerifySession(t *testing.T, s *Store, id string) {
	t.Helper()
	w := newSession(t, s, id)
	commits := map[int]ledger.CommitID{}
	for n := 1; n <= 4; n++ {
		commits[n] = w.add("", ledger.ThoughtData{Thought: fmt.Sprintf("step %d of %s", n, id), ThoughtNumber: n, NextThoughtNeeded: true}, "")
	}
	w.tips["fork:alt"] = commits[2]
	w.add("alt", ledger.ThoughtData{Thought: "what if redis", ThoughtNumber: 3, BranchFromThought: intp(2), BranchID: "alt", NextThoughtNeeded: true}, "")
	w.add("", ledger.ThoughtData{Thought: "correction to 2", ThoughtNumber: 5, IsRevision: true, RevisesThought: intp(2)}, commits[2])
	for _, branch := range []string{"", "alt"} {
		n := 3
		if branch == "" {
			n = 5
		}
		c, err := s.AddCritique(context.Background(), ledger.CritiqueRequest{Meta: w.meta, Branch: branch, ExpectedTip: w.tips[branch],
			ThoughtNumber: n, Critique: ledger.Critique{Text: "consider the cache", Model: "m", Timestamp: w.at.Add(1)},
			Author: ledger.Author{Name: "m"}})
		if err != nil {
			t.Fatal(err)
		}
		w.tips[branch] = c
	}
	w.add("alt", ledger.ThoughtData{Thought: "redis is faster", ThoughtNumber: 4, BranchFromThought: intp(2), BranchID: "alt"}, "")
}

// TestVerifyWholeSession checks that the thorough check passes on what the
// store writes, on both backends, from the log and from packs, in every
// partition layout; and that an unknown session is not found.
func TestVerifyWholeSession(t *testing.T) {
	want := ledger.IntegrityValidationResult{Valid: true, SessionExists: true, ManifestExists: true, ManifestValid: true}
	check := func(t *testing.T, s *Store, id string) {
		t.Helper()
		got, err := s.Verify(context.Background(), id, ledger.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Verify(%s) (-want +got):\n%s", id, diff)
		}
	}
	backends(t, func(t *testing.T, open func() *Store) {
		s := open()
		ids := []string{"a1b2c3d4-0000-4000-8000-000000000001", "a1b2c3d4-0000-4000-8000-000000000002"}
		for _, id := range ids {
			writeVerifySession(t, s, id)
			check(t, s, id)
		}
		s = open() // on disk: flushed into packs, read by a new store
		for _, id := range ids {
			check(t, s, id)
		}
		if _, err := s.Verify(context.Background(), "a1b2c3d4-0000-4000-8000-00000000000f", ledger.VerifyOptions{}); !errors.Is(err, ledger.ErrSessionNotFound) {
			t.Errorf("Verify of an unknown session: %v, want ErrSessionNotFound", err)
		}
	})
	for _, g := range []Granularity{None, Weekly, Daily} {
		t.Run(string(g), func(t *testing.T) {
			s, err := OpenMemory(Options{Partition: g})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			writeVerifySession(t, s, "a1b2c3d4-0000-4000-8000-000000000003")
			check(t, s, "a1b2c3d4-0000-4000-8000-000000000003")
		})
	}
}

// TestVerifyDamagedPack flips bytes inside the pack that holds one
// session: the thorough check must find the damage, as git fsck does, even
// where a session load does not look.
func TestVerifyDamagedPack(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed; this test needs it")
	}
	dir := filepath.Join(t.TempDir(), "p.git")
	// No background flush (a loaded machine could let one run between two
	// writes and split the session over two packs): Close packs it all in
	// one, which the damage below must hit.
	s, err := Open(dir, Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id := "a1b2c3d4-0000-4000-8000-000000000004"
	writeVerifySession(t, s, id)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	packs, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	if len(packs) != 1 {
		t.Fatalf("packs: %v, want one", packs)
	}
	data, err := os.ReadFile(packs[0])
	if err != nil {
		t.Fatal(err)
	}
	// Damage the middle of the pack, away from its header and checksum.
	for i := len(data) / 2; i < len(data)/2+8; i++ {
		data[i] ^= 0x5a
	}
	os.Chmod(packs[0], 0o644)
	if err := os.WriteFile(packs[0], data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "--git-dir", dir, "fsck", "--full").CombinedOutput(); err == nil {
		t.Fatalf("git fsck found no damage:\n%s", out)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Verify(context.Background(), id, ledger.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Valid || !strings.Contains(strings.Join(res.Errors, "\n"), "corrupt object ") {
		t.Errorf("Verify after damaging the pack = %+v; want invalid with a corrupt object", res)
	}
}

// TestNastyTextIsCleanForFsck writes a session whose title, thought text
// and author name hold NUL, control characters, angle brackets, newlines
// and invalid UTF-8 through the real store: git fsck --strict --full must
// be clean and verify OK.
func TestNastyTextIsCleanForFsck(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed; this test needs it")
	}
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	id := "a1b2c3d4-0000-4000-8000-0000000000ab"
	nasty := "a\x00b \x01\x1b[31m <x> \r\n\xff\xfe end\x00"
	meta := ledger.SessionMeta{ID: id, Title: "title\x00with NUL" + nasty, CreatedAt: t0}
	author := ledger.Author{Name: "\x00<evil>\nname\xff", Email: "e\x00<@>\n"}
	meta, c, err := s.CreateSession(ctx, meta, author)
	if err != nil {
		t.Fatal(err)
	}
	td := ledger.ThoughtData{Thought: "thought " + nasty, ThoughtNumber: 1, TotalThoughts: 1, Timestamp: t0.Add(1e9)}
	if _, err := s.Append(ctx, ledger.AppendRequest{Meta: meta, Thought: td, ExpectedTip: c, Author: author}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, dir, "fsck", "--strict", "--full", "--no-dangling")
	res, err := s.Verify(ctx, id, ledger.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid {
		t.Fatalf("verify: %+v", res)
	}
}

// TestVerifyDamagedDelta writes a session long enough that the pack holds
// its folder tree and manifest mostly as deltas, checks that verify passes
// it, then flips one byte inside the delta of a tree version that is
// neither the tip's nor the first: verify, which no longer rebuilds that
// version, must still name it as corrupt (the entry's CRC-32).
func TestVerifyDamagedDelta(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := "a1b2c3d4-0000-4000-8000-000000000009"
	w := newSession(t, s, id)
	for n := 1; n <= 60; n++ {
		w.add("", ledger.ThoughtData{Thought: fmt.Sprintf("step %d", n), ThoughtNumber: n, NextThoughtNeeded: true}, "")
	}
	if res, err := s.Verify(context.Background(), id, ledger.VerifyOptions{}); err != nil || !res.Valid {
		t.Fatalf("Verify before the damage: %+v, %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := s.Verify(context.Background(), id, ledger.VerifyOptions{}); err != nil || !res.Valid {
		t.Fatalf("Verify of the packed session: %+v, %v", res, err)
	}
	// A delta entry holding a tree.
	be := s.be.(*repo.FS)
	var victim hash
	var at int64
	var victimPack string
	var deltas int
	for _, pe := range be.Packs().Packs() {
		idx, err := pe.Index()
		if err != nil {
			t.Fatal(err)
		}
		for i := range idx.Count() {
			e, err := idx.Entry(i)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := be.Packs().ReadRaw(e.ID)
			if err != nil {
				t.Fatal(err)
			}
			if raw.Type != 0 {
				continue
			}
			deltas++
			if t, _, err := be.ReadObject(t.Context(), e.ID); err == nil && t == typeTree && victim == zeroHash {
				victim, at, victimPack = e.ID, raw.Off, raw.Pack.Name()
			}
		}
	}
	if victim == zeroHash {
		t.Fatalf("no tree stored as a delta among %d deltas: the test no longer covers the delta path", deltas)
	}
	s.Close()
	p := filepath.Join(dir, "objects", "pack", victimPack+".pack")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[at+3] ^= 0x10
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, full := range []bool{false, true} {
		res, err := s.Verify(context.Background(), id, ledger.VerifyOptions{Full: full})
		if err != nil {
			t.Fatal(err)
		}
		if res.Valid || !strings.Contains(strings.Join(res.Errors, "\n"), "corrupt object "+victim.String()) {
			t.Errorf("Verify (full %v) after damaging the delta of tree %s = %+v; want it named corrupt", full, victim, res)
		}
	}
}

// TestVerifyDamagedPackIndex: a pack index changed where no lookup reads
// it (the pack checksum it records) still reads, but verify, which checks
// each index's own checksum, reports it — in both of its modes.
func TestVerifyDamagedPackIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := "a1b2c3d4-0000-4000-8000-00000000000a"
	w := newSession(t, s, id)
	for n := 1; n <= 5; n++ {
		w.add("", ledger.ThoughtData{Thought: fmt.Sprintf("step %d", n), ThoughtNumber: n, NextThoughtNeeded: true}, "")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	idxs, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "pack-*.idx"))
	if len(idxs) == 0 {
		t.Fatal("no pack written")
	}
	for _, p := range idxs {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)-40] ^= 0x01
		os.Chmod(p, 0o644)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, full := range []bool{false, true} {
		s, err = Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.LoadSession(context.Background(), id); err != nil {
			t.Fatalf("the session does not load through the changed index: %v", err)
		}
		res, err := s.Verify(context.Background(), id, ledger.VerifyOptions{Full: full})
		if err != nil {
			t.Fatal(err)
		}
		if res.Valid || !strings.Contains(strings.Join(res.Errors, "\n"), ".idx: the pack index is damaged") {
			t.Fatalf("verify (full %v) of a damaged pack index: %+v", full, res)
		}
		s.Close()
	}
}
