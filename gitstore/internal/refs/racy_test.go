package refs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPackedCacheSeesARewriteItsKeyMisses: packed-refs rewritten in
// place, keeping its inode and size, with the same coarse time (a second
// as some file systems keep it), is what an inode reused within one tick
// looks like to the cache. While that time is recent the cache must not
// answer from the old content; once it is older than the racy window, a
// read settles it and the cache is used again.
func TestPackedCacheSeesARewriteItsKeyMisses(t *testing.T) {
	a, b := "refs/heads/sessions/s1/main", "refs/heads/sessions/s2/main"
	dir := packedRepo(t, a, b)
	path := filepath.Join(dir, "packed-refs")
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	coarse := time.Now().Truncate(time.Second)
	if err := os.Chtimes(path, coarse, coarse); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(dir, a); err != nil || got != id(a) {
		t.Fatalf("Read(a) = %s, %v", got, err)
	}
	// Same length: a's value swapped for b's.
	rewritten := bytes.Replace(old, []byte(id(a).String()), []byte(id(b).String()), 1)
	if bytes.Equal(rewritten, old) || len(rewritten) != len(old) {
		t.Fatal("the rewrite did not change a's line in place")
	}
	if err := os.WriteFile(path, rewritten, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, coarse, coarse); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(dir, a); err != nil || got != id(b) {
		t.Fatalf("after a rewrite with the same inode, size and a recent coarse time, Read(a) = %s, %v; want %s", got, err, id(b))
	}
	if all, err := ReadPacked(dir); err != nil || all[a] != id(b) {
		t.Fatalf("ReadPacked(a) = %s, %v; want %s", all[a], err, id(b))
	}

	// Settled: a time older than the window is trusted once read.
	settled := time.Now().Add(-2 * time.Minute).Truncate(time.Second)
	if err := os.Chtimes(path, settled, settled); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir, a); err != nil {
		t.Fatal(err)
	}
	packedCache.Lock()
	e := packedCache.m[dir]
	packedCache.Unlock()
	if e.racy || e.mtime != settled.UnixNano() {
		t.Errorf("the entry read with a settled time: racy %v, mtime %d; want a settled entry at %d", e.racy, e.mtime, settled.UnixNano())
	}
}
