package repo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/refs"
)

// TestFlushPublishesManyRefsInPackedRefs: a flush that moves many refs
// publishes them through one rewrite of packed-refs, with no loose file;
// a ref that already has a loose file (from a smaller flush) is written
// loose, since its file would shadow a packed value; plain git reads every
// ref at its commit and fsck passes; and a new opener reads the same.
func TestFlushPublishesManyRefsInPackedRefs(t *testing.T) {
	dir := t.TempDir()
	r := openFS(t, dir)
	ctx := t.Context()
	tips := map[string]object.Hash{}
	apply := func(ref, content string) {
		t.Helper()
		b, c := commitBatch(ref, tips[ref], tips[ref], content)
		if err := r.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
		tips[ref] = c
	}
	flush := func() {
		t.Helper()
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	loosePath := func(ref string) string { return filepath.Join(dir, filepath.FromSlash(ref)) }
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	// A small flush: loose, as before.
	first := sessions + "s00/main"
	apply(first, "first")
	flush()
	if !exists(loosePath(first)) {
		t.Fatalf("a flush of one ref did not write it loose")
	}

	// A large one: packed, but for the ref that is loose already.
	n := packedPublishMin + 4
	for round := range 2 {
		for i := range n {
			apply(fmt.Sprintf("%ss%02d/main", sessions, i), fmt.Sprint("round ", round, " session ", i))
		}
		flush()
	}
	for i := 1; i < n; i++ {
		if ref := fmt.Sprintf("%ss%02d/main", sessions, i); exists(loosePath(ref)) {
			t.Errorf("%s was written loose in a flush of %d refs", ref, n)
		}
	}
	packed, err := refs.ReadPacked(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(loosePath(first)); err != nil || strings.TrimSpace(string(got)) != tips[first].String() {
		t.Errorf("the loose ref %s holds %q, %v; want %s", first, got, err, tips[first])
	}
	for ref, tip := range tips {
		if ref != first && packed[ref] != tip {
			t.Errorf("packed-refs has %s at %s, want %s", ref, packed[ref], tip)
		}
		if h, err := r.ReadRef(ctx, ref); err != nil || h != tip {
			t.Errorf("ReadRef(%s) = %s, %v; want %s", ref, h, err, tip)
		}
	}

	if _, err := os.Stat(filepath.Join(dir, "packed-refs.lock")); !os.IsNotExist(err) {
		t.Errorf("packed-refs.lock left: %v", err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/sessions/"), "\n") {
		name, h, _ := strings.Cut(line, " ")
		got[name] = h
	}
	for ref, tip := range tips {
		if got[ref] != tip.String() {
			t.Errorf("git reads %s at %q, want %s", ref, got[ref], tip)
		}
	}
	if len(got) != len(tips) {
		t.Errorf("git lists %d session refs, want %d", len(got), len(tips))
	}
	git(t, dir, "fsck", "--strict")

	r.Close()
	r2 := openFS(t, dir)
	for ref, tip := range tips {
		if h, err := r2.ReadRef(ctx, ref); err != nil || h != tip {
			t.Errorf("a new opener reads %s at %s, %v; want %s", ref, h, err, tip)
		}
	}
}

// TestFlushPublishesLooseWhilePackedRefsIsHeld: with packed-refs.lock held
// (git packing refs), a large flush writes its refs as loose files and
// leaves the lock alone.
func TestFlushPublishesLooseWhilePackedRefsIsHeld(t *testing.T) {
	dir := t.TempDir()
	r := openFS(t, dir)
	ctx := t.Context()
	lock := filepath.Join(dir, "packed-refs.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tips := applyNewSessions(t, r, packedPublishMin+1)
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("the held packed-refs.lock was removed: %v", err)
	}
	checkLoose(t, dir, tips)
}

// TestFlushPublishesLooseWhenPackedRefsFails: a packed-refs the flush
// cannot rewrite (a rename Windows refuses, a read that fails) does not
// fail the flush: its refs are written as loose files.
func TestFlushPublishesLooseWhenPackedRefsFails(t *testing.T) {
	dir := t.TempDir()
	r := openFS(t, dir)
	ctx := t.Context()
	tried := 0
	writePacked = func(string, map[string]object.Hash) error {
		tried++
		return errors.New("rename refused")
	}
	t.Cleanup(func() { writePacked = refs.WritePacked })
	tips := applyNewSessions(t, r, packedPublishMin+1)
	if err := r.Flush(ctx); err != nil {
		t.Fatalf("a flush failed on a packed-refs it could do without: %v", err)
	}
	checkLoose(t, dir, tips)
	if tried != 1 {
		t.Errorf("the packed-refs rewrite was tried %d times, want 1", tried)
	}
}

// applyNewSessions applies a first thought to n sessions and returns
// their refs' new tips.
func applyNewSessions(t *testing.T, r *FS, n int) map[string]object.Hash {
	t.Helper()
	tips := map[string]object.Hash{}
	for i := range n {
		ref := fmt.Sprintf("%ss%02d/main", sessions, i)
		b, c := commitBatch(ref, object.ZeroHash, object.ZeroHash, ref)
		if err := r.Apply(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		tips[ref] = c
	}
	return tips
}

// checkLoose checks that every ref in tips is a loose file holding its tip.
func checkLoose(t *testing.T, dir string, tips map[string]object.Hash) {
	t.Helper()
	for ref, tip := range tips {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ref)))
		if err != nil || strings.TrimSpace(string(data)) != tip.String() {
			t.Errorf("loose %s: %q, %v; want %s", ref, data, err, tip)
		}
	}
}
