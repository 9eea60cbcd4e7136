package refs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// packedRepo is a repository whose refs are all packed: names[i] → id(names[i]).
func packedRepo(t *testing.T, names ...string) string {
	t.Helper()
	dir := bareRepo(t)
	for _, n := range names {
		if _, err := Write(dir, n, id(n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := Pack(dir); err != nil {
		t.Fatal(err)
	}
	if loose, _ := ListLoose(dir, "refs/"); len(loose) != 0 {
		t.Fatalf("loose refs after Pack: %v", loose)
	}
	return dir
}

// TestDeletePacked: a ref that is only packed (its directory gone) is
// deleted from packed-refs; a dead flusher's packed-refs.lock and ref
// .lock do not stop it; the others stay; deleting it again is no error;
// and a map ReadPacked handed out before is not changed under its holder.
func TestDeletePacked(t *testing.T) {
	a, b := "refs/heads/sessions/s1/main", "refs/heads/sessions/s2/main"
	dir := packedRepo(t, a, b)
	before, err := ReadPacked(dir)
	if err != nil || len(before) != 2 {
		t.Fatalf("ReadPacked = %v, %v", before, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "refs", "heads", "sessions", "s1")); !os.IsNotExist(err) {
		t.Fatalf("Pack left s1's directory: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "packed-refs.lock"), []byte("dead"), 0o644)
	syncDir, err := Delete(dir, a)
	if err != nil || syncDir != dir {
		t.Fatalf("Delete of a packed ref = %q, %v; want the git dir to sync", syncDir, err)
	}
	if got, _ := Read(dir, a); got != object.ZeroHash {
		t.Fatalf("a deleted packed ref reads %s", got)
	}
	if got, _ := Read(dir, b); got != id(b) {
		t.Fatalf("the other packed ref reads %s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "packed-refs.lock")); !os.IsNotExist(err) {
		t.Errorf("packed-refs.lock left: %v", err)
	}
	if before[a] != id(a) || len(before) != 2 {
		t.Errorf("the map ReadPacked returned earlier changed: %v", before)
	}
	if _, err := Delete(dir, a); err != nil {
		t.Errorf("deleting a ref that is gone: %v", err)
	}
	// A loose ref with a dead <ref>.lock beside it, packed as well.
	if _, err := Write(dir, b, id("b2")); err != nil {
		t.Fatal(err)
	}
	bPath := filepath.Join(dir, filepath.FromSlash(b))
	os.WriteFile(bPath+".lock", nil, 0o644)
	if d, err := Delete(dir, b); err != nil || d != filepath.Dir(bPath) {
		t.Fatalf("Delete of a loose and packed ref = %q, %v", d, err)
	}
	if got, _ := Read(dir, b); got != object.ZeroHash {
		t.Fatalf("a deleted loose and packed ref reads %s (an older packed value showed through?)", got)
	}
	if _, err := os.Stat(bPath + ".lock"); !os.IsNotExist(err) {
		t.Errorf("the ref's lock was left: %v", err)
	}
}

// TestPackedRefsBusy: when packed-refs.lock cannot be taken (here a
// directory stands in its place), Pack leaves everything as it was and
// says nothing (it packs another time), while Delete of a packed ref
// fails naming packed-refs, the ref still there.
func TestPackedRefsBusy(t *testing.T) {
	a := "refs/heads/sessions/s1/main"
	dir := packedRepo(t, a)
	if _, err := Write(dir, "refs/heads/loose", id("l")); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "packed-refs.lock", "held"), 0o755)
	if err := Pack(dir); err != nil {
		t.Fatalf("Pack with packed-refs busy: %v", err)
	}
	if loose, _ := ListLoose(dir, "refs/"); len(loose) != 1 {
		t.Errorf("Pack with packed-refs busy changed the loose refs: %v", loose)
	}
	_, err := Delete(dir, a)
	if err == nil || !strings.Contains(err.Error(), "packed-refs") || !errors.Is(err, errPackedBusy) {
		t.Fatalf("Delete with packed-refs busy: %v", err)
	}
	if got, _ := Read(dir, a); got != id(a) {
		t.Errorf("a refused delete lost the ref: %s", got)
	}
}

// TestReadThroughAFile: a ref a/b looked up where a is a ref file is
// absent (git cannot hold both), and a packed a/b still answers.
func TestReadThroughAFile(t *testing.T) {
	dir := packedRepo(t, "refs/heads/a/b")
	if _, err := Write(dir, "refs/heads/x", id("x")); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(dir, "refs/heads/x/y"); err != nil || got != object.ZeroHash {
		t.Errorf("a ref under a ref file: %s, %v", got, err)
	}
	os.RemoveAll(filepath.Join(dir, "refs", "heads", "a"))
	os.WriteFile(filepath.Join(dir, "refs", "heads", "a"), []byte(id("a").String()+"\n"), 0o644)
	if got, err := Read(dir, "refs/heads/a/b"); err != nil || got != id("refs/heads/a/b") {
		t.Errorf("a packed ref under a loose ref file: %s, %v", got, err)
	}
}
