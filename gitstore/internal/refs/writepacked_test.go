package refs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// packedLines is packed-refs' lines after its header, checked sorted.
func packedLines(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "packed-refs"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if lines[0] != strings.TrimSuffix(packedHeader, "\n") {
		t.Fatalf("packed-refs header %q", lines[0])
	}
	lines = lines[1:]
	names := make([]string, len(lines))
	for i, l := range lines {
		_, names[i], _ = strings.Cut(l, " ")
	}
	if !slices.IsSorted(names) {
		t.Fatalf("packed-refs not sorted: %v", names)
	}
	return lines
}

// TestWritePacked: refs given to WritePacked are read back with their new
// values, the other packed refs keep theirs, new names are put in order,
// and a packed-refs that does not exist yet is made.
func TestWritePacked(t *testing.T) {
	a, b, c, z := "refs/heads/sessions/a/main", "refs/heads/sessions/b/main", "refs/heads/sessions/c/main", "refs/heads/sessions/z/main"
	dir := packedRepo(t, a, c, z)
	vals := map[string]object.Hash{b: id("b1"), c: id("c1")}
	if err := WritePacked(dir, vals); err != nil {
		t.Fatal(err)
	}
	want := map[string]object.Hash{a: id(a), b: id("b1"), c: id("c1"), z: id(z)}
	for n, h := range want {
		if got, err := Read(dir, n); err != nil || got != h {
			t.Errorf("%s reads %s, %v; want %s", n, got, err, h)
		}
	}
	if lines := packedLines(t, dir); len(lines) != 4 {
		t.Errorf("packed-refs holds %d refs, want 4: %v", len(lines), lines)
	}
	if loose, _ := ListLoose(dir, "refs/"); len(loose) != 0 {
		t.Errorf("WritePacked left loose refs: %v", loose)
	}
	if _, err := os.Stat(filepath.Join(dir, "packed-refs.lock")); !os.IsNotExist(err) {
		t.Errorf("packed-refs.lock left: %v", err)
	}

	// Many rewrites in a row, each read back at once: the cache of the
	// parsed file never answers with an older one.
	for i := range 50 {
		h := id(fmt.Sprint("round", i))
		if err := WritePacked(dir, map[string]object.Hash{a: h}); err != nil {
			t.Fatal(err)
		}
		if got, _ := Read(dir, a); got != h {
			t.Fatalf("round %d: %s reads %s, want %s", i, a, got, h)
		}
	}

	fresh := bareRepo(t)
	os.Remove(filepath.Join(fresh, "packed-refs"))
	if err := WritePacked(fresh, map[string]object.Hash{z: id("z"), a: id("a")}); err != nil {
		t.Fatal(err)
	}
	if lines := packedLines(t, fresh); len(lines) != 2 {
		t.Errorf("a new packed-refs holds %v", lines)
	}
	if got, _ := Read(fresh, z); got != id("z") {
		t.Errorf("%s reads %s in a new packed-refs", z, got)
	}
}

// TestWritePackedLeavesWhatItMustNotRewrite: a packed-refs.lock somebody
// holds is not taken over, and a packed-refs with peeled tags (which the
// rewrite would drop) is not rewritten: both answer ErrPackedBusy and
// leave the file as it was.
func TestWritePackedLeavesWhatItMustNotRewrite(t *testing.T) {
	a := "refs/heads/sessions/a/main"
	dir := packedRepo(t, a)
	path := filepath.Join(dir, "packed-refs")
	before, _ := os.ReadFile(path)
	os.WriteFile(path+".lock", []byte("git's"), 0o644)
	if err := WritePacked(dir, map[string]object.Hash{a: id("new")}); !errors.Is(err, ErrPackedBusy) {
		t.Fatalf("WritePacked with packed-refs.lock held: %v", err)
	}
	if held, _ := os.ReadFile(path + ".lock"); string(held) != "git's" {
		t.Fatal("WritePacked took over a held packed-refs.lock")
	}
	os.Remove(path + ".lock")
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("packed-refs changed")
	}

	peeled := string(before) + id("tag").String() + " refs/tags/v1\n^" + id("target").String() + "\n"
	os.WriteFile(path, []byte(peeled), 0o644)
	if err := WritePacked(dir, map[string]object.Hash{a: id("new")}); !errors.Is(err, ErrPackedBusy) {
		t.Fatalf("WritePacked over peeled tags: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != peeled {
		t.Fatal("packed-refs with peeled tags was rewritten")
	}
	if _, err := os.Stat(path + ".lock"); !os.IsNotExist(err) {
		t.Errorf("packed-refs.lock left: %v", err)
	}
}

// TestWritePackedUnsorted: a packed-refs edited by hand out of order is
// written back sorted, with every ref.
func TestWritePackedUnsorted(t *testing.T) {
	dir := bareRepo(t)
	a, b, c := "refs/heads/a", "refs/heads/b", "refs/heads/c"
	os.WriteFile(filepath.Join(dir, "packed-refs"), []byte(id(c).String()+" "+c+"\n"+id(a).String()+" "+a+"\n"), 0o644)
	if err := WritePacked(dir, map[string]object.Hash{b: id(b), c: id("c2")}); err != nil {
		t.Fatal(err)
	}
	if lines := packedLines(t, dir); len(lines) != 3 {
		t.Fatalf("packed-refs: %v", lines)
	}
	for n, h := range map[string]object.Hash{a: id(a), b: id(b), c: id("c2")} {
		if got, _ := Read(dir, n); got != h {
			t.Errorf("%s reads %s, want %s", n, got, h)
		}
	}
}

// TestWritePackedLeavesADamagedFile: a packed-refs that does not parse is
// not rewritten (what it holds would be lost): ErrPackedBusy.
func TestWritePackedLeavesADamagedFile(t *testing.T) {
	dir := bareRepo(t)
	path := filepath.Join(dir, "packed-refs")
	damaged := "not a ref line\n"
	os.WriteFile(path, []byte(damaged), 0o644)
	if err := WritePacked(dir, map[string]object.Hash{"refs/heads/a": id("a")}); !errors.Is(err, ErrPackedBusy) {
		t.Fatalf("WritePacked over a damaged packed-refs: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != damaged {
		t.Fatal("a damaged packed-refs was rewritten")
	}
}

// TestWritePackedReadsTheFileNotTheCache: the cache's entry for
// packed-refs may name an older version (another process's rewrite that
// got the same inode, size and time on a file system with coarse times);
// WritePacked merges into what the file holds, so it never puts back a
// value another process moved.
func TestWritePackedReadsTheFileNotTheCache(t *testing.T) {
	a, b := "refs/heads/sessions/a/main", "refs/heads/sessions/b/main"
	dir := packedRepo(t, a, b)
	e, err := readPackedEntry(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The file as another process left it: b moved, same size.
	moved := strings.Replace(string(e.data), id(b).String(), id("b moved").String(), 1)
	stale := e
	stale.data = e.data
	stale.p = &packedParse{}
	if err := os.WriteFile(filepath.Join(dir, "packed-refs"), []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "packed-refs"))
	if err != nil {
		t.Fatal(err)
	}
	stale.ino, stale.size, stale.mtime = int64(durable.StatID(fi)), fi.Size(), fi.ModTime().UnixNano()
	packedCache.Lock()
	packedCache.m[dir] = stale // the old content under the new file's identity
	packedCache.Unlock()

	if err := WritePacked(dir, map[string]object.Hash{a: id("a moved")}); err != nil {
		t.Fatal(err)
	}
	packedCache.Lock()
	delete(packedCache.m, dir)
	packedCache.Unlock()
	if got, _ := Read(dir, b); got != id("b moved") {
		t.Errorf("%s reads %s after WritePacked, want the value the file held (%s)", b, got, id("b moved"))
	}
	if got, _ := Read(dir, a); got != id("a moved") {
		t.Errorf("%s reads %s, want %s", a, got, id("a moved"))
	}
}
