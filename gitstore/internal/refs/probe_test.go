package refs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// writeLargePacked writes a sorted packed-refs of many session refs after
// head (lines already in order), larger than probeSize.
func writeLargePacked(t *testing.T, dir, header string, head ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString(header)
	for _, l := range head {
		b.WriteString(l)
	}
	for i := 0; b.Len() <= 3*probeSize; i++ {
		fmt.Fprintf(&b, "%s refs/heads/sessions/s%06d\n", id(fmt.Sprint(i)), i)
	}
	if err := os.WriteFile(filepath.Join(dir, "packed-refs"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func forgetPacked(dir string) {
	packedCache.Lock()
	delete(packedCache.m, dir)
	packedCache.Unlock()
}

func cachedPacked(dir string) bool {
	packedCache.Lock()
	defer packedCache.Unlock()
	_, ok := packedCache.m[dir]
	return ok
}

// TestReadProbesSortedHead: a ref near the head of a large sorted
// packed-refs is read without parsing the file (nothing is cached), with
// the same answer as the parse (a CRLF line too), zero for a ref
// that is not there; a ref past the head, or a file not marked sorted, is
// read through the parse.
func TestReadProbesSortedHead(t *testing.T) {
	const sorted = "# pack-refs with: peeled fully-peeled sorted \n"
	dir := t.TempDir()
	writeLargePacked(t, dir, sorted,
		id("k").String()+" refs/heads/knowledge\n",
		"^"+id("peeled").String()+"\n",
		id("m2").String()+" refs/heads/main\r\n")
	forgetPacked(dir)
	for _, c := range []struct {
		name string
		want object.Hash
	}{
		{"refs/heads/main", id("m2")},
		{"refs/heads/knowledge", id("k")},
		{"refs/heads/absent", object.ZeroHash},
	} {
		got, err := Read(dir, c.name)
		if err != nil || got != c.want {
			t.Errorf("Read(%s) = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	if cachedPacked(dir) {
		t.Fatal("reading refs at the head of packed-refs parsed the whole file")
	}
	// Past the head: parsed (and cached), and then the probe answers from
	// the cache.
	last := "refs/heads/sessions/s" + fmt.Sprintf("%06d", 3*probeSize/80)
	want, err := Read(dir, last)
	if err != nil {
		t.Fatal(err)
	}
	if !cachedPacked(dir) {
		t.Fatalf("Read(%s) did not parse packed-refs", last)
	}
	names, hashes, err := parsePackedRefs(mustRead(t, filepath.Join(dir, "packed-refs")))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		if n == last && hashes[i] != want {
			t.Errorf("Read(%s) = %v, the parse says %v", last, want, hashes[i])
		}
	}
	if got, _ := Read(dir, "refs/heads/main"); got != id("m2") {
		t.Errorf("Read(main) from the cache = %v", got)
	}

	// Not marked sorted: the head proves nothing about what follows.
	dir = t.TempDir()
	writeLargePacked(t, dir, "# pack-refs with: peeled \n", id("m").String()+" refs/heads/main\n")
	forgetPacked(dir)
	if got, err := Read(dir, "refs/heads/absent"); err != nil || got != object.ZeroHash {
		t.Errorf("Read(absent) = %v, %v", got, err)
	}
	if !cachedPacked(dir) {
		t.Error("a packed-refs not marked sorted was answered from its head")
	}

	// A damaged line in the head: the parse reports it.
	dir = t.TempDir()
	writeLargePacked(t, dir, sorted, "zzzz refs/heads/main\n")
	forgetPacked(dir)
	if _, err := Read(dir, "refs/heads/main"); err == nil {
		t.Error("a damaged packed-refs line read without error")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
