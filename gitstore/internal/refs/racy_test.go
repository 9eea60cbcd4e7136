package refs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// TestPackedCacheSeesARewriteItsKeyMisses: packed-refs rewritten in
// place, keeping its inode and size, with the same time, is what a
// rewrite that reused the inode within one tick of the file system's
// clock looks like to the cache. While that time is recent (a coarse one
// for seconds, any for a tick) the cache must not answer from the old
// content, neither through the parse nor through the probe of a large
// file's head; once the time is settled, a read settles the entry and
// the cache is used again.
func TestPackedCacheSeesARewriteItsKeyMisses(t *testing.T) {
	a, b := "refs/heads/sessions/s1/main", "refs/heads/sessions/s2/main"
	first := "refs/heads/sessions/s000000" // the first line of writeLargePacked's refs
	for _, c := range []struct {
		name  string
		large bool
		// mtime is the time both versions carry, from now: a little ahead
		// of the clock, so that it stays recent however slowly the test
		// runs (a time ahead is racy too).
		mtime func(now time.Time) time.Time
	}{
		{"whole seconds", false, func(now time.Time) time.Time { return now.Truncate(time.Second).Add(time.Second) }},
		{"nanoseconds", false, func(now time.Time) time.Time { return now.Add(time.Second + 123) }},
		{"whole seconds, a large file read by its head", true, func(now time.Time) time.Time { return now.Truncate(time.Second).Add(time.Second) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := packedRepo(t, a, b)
			name, was, want := a, id(a), id(b)
			if c.large {
				writeLargePacked(t, dir, "# pack-refs with: peeled fully-peeled sorted \n")
				name, was, want = first, id("0"), id("another value")
			}
			path := filepath.Join(dir, "packed-refs")
			old, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			at := c.mtime(time.Now())
			if err := os.Chtimes(path, at, at); err != nil {
				t.Fatal(err)
			}
			if all, err := ReadPacked(dir); err != nil || all[name] != was {
				t.Fatalf("ReadPacked[%s] = %s, %v; want %s", name, all[name], err, was)
			}
			rewritten := bytes.Replace(old, []byte(was.String()), []byte(want.String()), 1)
			if bytes.Equal(rewritten, old) || len(rewritten) != len(old) {
				t.Fatal("the rewrite did not change the line in place")
			}
			if err := os.WriteFile(path, rewritten, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, at, at); err != nil {
				t.Fatal(err)
			}
			if got, err := Read(dir, name); err != nil || got != want {
				t.Fatalf("after a rewrite with the same inode, size and a recent time, Read(%s) = %s, %v; want %s", name, got, err, want)
			}
			if all, err := ReadPacked(dir); err != nil || all[name] != want {
				t.Fatalf("ReadPacked[%s] = %s, %v; want %s", name, all[name], err, want)
			}

			settled := time.Now().Add(-2 * time.Minute).Truncate(time.Second)
			if err := os.Chtimes(path, settled, settled); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadPacked(dir); err != nil {
				t.Fatal(err)
			}
			packedCache.Lock()
			e := packedCache.m[dir]
			packedCache.Unlock()
			if e.racy || e.mtime != settled.UnixNano() {
				t.Errorf("the entry read with a settled time: racy %v, mtime %d; want a settled entry at %d", e.racy, e.mtime, settled.UnixNano())
			}
		})
	}
}

// TestWrittenPackedEntryIsTrusted: the entry WritePacked leaves for its
// own rewrite is used by the next read although its time is young (the
// reads after every flush would otherwise read the file again), unless
// the time is coarse or the file system gives no inode to tell files by.
func TestWrittenPackedEntryIsTrusted(t *testing.T) {
	names := []string{"refs/heads/sessions/s1/main", "refs/heads/sessions/s2/main"}
	dir := packedRepo(t, names...)
	vals := map[string]object.Hash{names[0]: id("moved")}
	if err := WritePacked(dir, vals); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "packed-refs"))
	if err != nil {
		t.Fatal(err)
	}
	packedCache.Lock()
	e := packedCache.m[dir]
	packedCache.Unlock()
	wantRacy := durable.StatID(fi) == 0 || durable.Coarse(fi.ModTime())
	if e.racy != wantRacy || !e.matches(fi) && !wantRacy {
		t.Errorf("WritePacked's entry: racy %v (want %v), matches the file %v", e.racy, wantRacy, e.matches(fi))
	}
	if got, err := Read(dir, names[0]); err != nil || got != id("moved") {
		t.Errorf("Read after WritePacked = %s, %v", got, err)
	}
	// Trusted means answered from the cache: a rewrite in place that
	// keeps inode, size and time (which none of ours makes) is not read.
	path := filepath.Join(dir, "packed-refs")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(id("moved").String()), []byte(id("elsewhere").String()), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	want := id("moved") // the cache's answer
	if wantRacy {
		want = id("elsewhere") // read again
	}
	if got, err := Read(dir, names[0]); err != nil || got != want {
		t.Errorf("Read with the file changed under the same key = %s, %v; want %s (racy %v)", got, err, want, wantRacy)
	}
}
