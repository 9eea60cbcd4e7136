package repo

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
)

// TestFSTrimKeepsLaterBatches: a flush's trim drops the published batches
// from the overlay and keeps those logged after its snapshot as they are,
// without replaying the log; the overlay it leaves is the one a replay of
// the trimmed log builds (the fallback, when the overlay's order cannot be
// vouched for), and another opener recovers exactly those batches.
func TestFSTrimKeepsLaterBatches(t *testing.T) {
	for _, tc := range []struct {
		name        string
		kept, ahead bool
	}{{"kept", true, false}, {"kept, filled ahead", true, true}, {"replayed", false, false}} {
		kept := tc.kept
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r := openFS(t, dir)
			ctx := t.Context()
			apply := func(b *wal.Batch) {
				t.Helper()
				if err := r.Apply(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			b1, c1 := commitBatch(sessions+"s1/main", object.ZeroHash, object.ZeroHash, "one")
			b2, c2 := commitBatch(sessions+"s2/main", object.ZeroHash, object.ZeroHash, "two")
			apply(b1)
			apply(b2)
			// The flush's snapshot, then batches logged while it runs.
			if err := r.lock(ctx); err != nil {
				t.Fatal(err)
			}
			recs, end := r.recs, r.log.End()
			var tr *wal.Trimming
			if tc.ahead {
				// As publish does: the new log filled before the
				// batches below are logged, which it must add.
				tr = r.log.BeginTrim(end)
			}
			r.unlock()
			if tr != nil {
				if err := tr.Fill(); err != nil {
					t.Fatal(err)
				}
			}
			b3, c3 := commitBatch(sessions+"s3/main", object.ZeroHash, object.ZeroHash, "three")
			b4, c4 := commitBatch(sessions+"s1/main", c1, c1, "four")
			apply(b3)
			apply(b4)
			if !kept {
				// Batches equal to the published ones but not the
				// overlay's own: the trim must replay.
				recs = []*wal.Batch{{Objects: b1.Objects, Updates: b1.Updates}, {Objects: b2.Objects, Updates: b2.Updates}}
			}
			if err := r.lock(ctx); err != nil {
				t.Fatal(err)
			}
			err := r.trimLog(ctx, recs, end, tr)
			r.unlock()
			if err != nil {
				t.Fatal(err)
			}
			r.mu.Lock()
			gotRefs := maps.Clone(r.refs)
			n := len(r.recs)
			same := n == 2 && r.recs[0] == b3 && r.recs[1] == b4
			_, has2 := r.objs[c2]
			_, has4 := r.objs[c4]
			r.mu.Unlock()
			want := map[string]object.Hash{sessions + "s3/main": c3, sessions + "s1/main": c4}
			if !maps.Equal(gotRefs, want) {
				t.Fatalf("overlay refs after the trim: %v, want %v", gotRefs, want)
			}
			if n != 2 || same != kept {
				t.Fatalf("overlay holds %d batches (the appended ones themselves: %v), want 2 (%v)", n, same, kept)
			}
			if has2 || !has4 {
				t.Fatalf("overlay objects: published commit kept %v, later commit kept %v", has2, has4)
			}
			if typ, _, err := r.ReadObject(ctx, c4); err != nil || typ != object.TypeCommit {
				t.Fatalf("ReadObject of a kept commit: %v %v", typ, err)
			}
			// Another process opening the repository finds exactly the
			// kept batches in the log, and publishes them.
			other := openFS(t, dir)
			for ref, h := range want {
				if got, err := other.ReadRef(ctx, ref); err != nil || got != h {
					t.Fatalf("another opener reads %s = %s, %v; want %s", ref, got, err, h)
				}
				if got := git(t, dir, "rev-parse", ref); got != h.String() {
					t.Fatalf("git rev-parse %s = %s, want %s", ref, got, h)
				}
			}
		})
	}
}

// TestFSTrimFilledThenKilled: a process killed after filling a trim's new
// log, before putting it in place, leaves the old log whole; the next
// opener removes the new file and recovers every batch.
func TestFSTrimFilledThenKilled(t *testing.T) {
	dir := t.TempDir()
	r := openFS(t, dir)
	ctx := t.Context()
	b1, c1 := commitBatch(sessions+"s1/main", object.ZeroHash, object.ZeroHash, "one")
	b2, c2 := commitBatch(sessions+"s2/main", object.ZeroHash, object.ZeroHash, "two")
	if err := r.Apply(ctx, b1); err != nil {
		t.Fatal(err)
	}
	if err := r.lock(ctx); err != nil {
		t.Fatal(err)
	}
	tr := r.log.BeginTrim(r.log.End())
	r.unlock()
	if err := tr.Fill(); err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(ctx, b2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(r.log.Path() + ".tmp"); err != nil {
		t.Fatalf("the filled trim's file: %v", err)
	}
	// As if killed now: copy the repository as it is.
	crashed := t.TempDir()
	if out, err := exec.Command("cp", "-a", dir+"/.", crashed).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	tr.Abort()
	r2 := openFS(t, crashed)
	if _, err := os.Stat(r2.log.Path() + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the killed trim's file survived the open: %v", err)
	}
	for ref, want := range map[string]object.Hash{sessions + "s1/main": c1, sessions + "s2/main": c2} {
		if got := git(t, crashed, "rev-parse", ref); got != want.String() {
			t.Fatalf("after recovery git rev-parse %s = %s, want %s", ref, got, want)
		}
	}
}
