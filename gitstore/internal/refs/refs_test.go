package refs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

func id(s string) object.Hash { return object.HashObject(object.TypeCommit, []byte(s)) }

func bareRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := exec.LookPath("git"); err != nil {
		for _, d := range []string{"refs/heads", "objects"} {
			os.MkdirAll(filepath.Join(dir, d), 0o755)
		}
		return dir
	}
	if out, err := exec.Command("git", "init", "--bare", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return dir
}

// TestWritePackDelete: loose refs, then packed, then deleted from both,
// read the same through Read and List at every step, and a missing ref
// reads as the zero hash.
func TestWritePackDelete(t *testing.T) {
	dir := bareRepo(t)
	a, b := "refs/heads/sessions/s1/main", "refs/heads/sessions/s1/branches/alt"
	for name, v := range map[string]string{a: "a", b: "b", "refs/heads/knowledge": "k"} {
		dirs, err := Write(dir, name, id(v))
		if err != nil || len(dirs) == 0 {
			t.Fatalf("Write %s: %v, %v", name, dirs, err)
		}
	}
	want := map[string]object.Hash{a: id("a"), b: id("b")}
	check := func(step string) {
		t.Helper()
		got, err := List(dir, "refs/heads/sessions/")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("%s: List (-want +got):\n%s", step, diff)
		}
		for name, h := range want {
			if got, err := Read(dir, name); err != nil || got != h {
				t.Fatalf("%s: Read(%s) = %s, %v", step, name, got, err)
			}
		}
	}
	check("loose")
	if err := Pack(dir); err != nil {
		t.Fatal(err)
	}
	if loose, _ := ListLoose(dir, "refs/"); len(loose) != 0 {
		t.Fatalf("loose refs left after Pack: %v", loose)
	}
	packed, err := ReadPacked(dir)
	if err != nil || len(packed) != 3 {
		t.Fatalf("ReadPacked = %v, %v", packed, err)
	}
	check("packed")
	names, hashes, err := PackedUnder(dir, "refs/heads/sessions/")
	if err != nil || len(names) != 2 || names[0] != b || hashes[0] != id("b") || names[1] != a || hashes[1] != id("a") {
		t.Fatalf("PackedUnder = %v, %v, %v", names, hashes, err)
	}
	if names, _, err := PackedUnder(dir, "refs/heads/none/"); err != nil || len(names) != 0 {
		t.Fatalf("PackedUnder of no ref = %v, %v", names, err)
	}
	// A loose ref written after packing wins over its packed value.
	if _, err := Write(dir, a, id("a2")); err != nil {
		t.Fatal(err)
	}
	want[a] = id("a2")
	check("loose over packed")
	if _, err := Delete(dir, a); err != nil {
		t.Fatal(err)
	}
	delete(want, a)
	check("deleted")
	if got, err := Read(dir, a); err != nil || got != object.ZeroHash {
		t.Fatalf("a deleted ref reads %s, %v", got, err)
	}
	if got, err := Read(dir, "refs/heads/nothing/here"); err != nil || got != object.ZeroHash {
		t.Fatalf("a missing ref reads %s, %v", got, err)
	}
	if _, err := exec.LookPath("git"); err == nil {
		out, err := exec.Command("git", "-C", dir, "for-each-ref", "--format=%(objectname) %(refname)").CombinedOutput()
		if err != nil {
			t.Fatalf("git for-each-ref: %v\n%s", err, out)
		}
		if s := string(out); !strings.Contains(s, id("b").String()+" "+b) || strings.Contains(s, a) {
			t.Fatalf("git sees:\n%s", s)
		}
	}
}

// TestLockPolicy: an existing <ref>.lock is an error unless Busy clears it,
// and Check refuses the move with the lock held, leaving the ref alone.
func TestLockPolicy(t *testing.T) {
	dir := bareRepo(t)
	name := "refs/heads/sessions/s/main"
	if _, err := Write(dir, name, id("1")); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, filepath.FromSlash(name)) + ".lock"
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(dir, name, id("2")); err == nil {
		t.Fatal("Write went through an existing lock")
	}
	cleared := 0
	_, err := WriteWith(dir, name, id("2"), LockPolicy{Busy: func(l string) error { cleared++; return os.Remove(l) }})
	if err != nil || cleared != 1 {
		t.Fatalf("Busy clearing the lock: %v (%d calls)", err, cleared)
	}
	refused := errors.New("moved")
	if _, err := WriteWith(dir, name, id("3"), LockPolicy{Check: func() error { return refused }}); !errors.Is(err, refused) {
		t.Fatalf("Check refusing: %v", err)
	}
	if got, _ := Read(dir, name); got != id("2") {
		t.Fatalf("ref is %s after a refused move, want %s", got, id("2"))
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("lock left behind: %v", err)
	}
}

// TestBadLooseRefs: a loose ref file that does not hold an object id is
// reported (verify names it) and not listed.
func TestBadLooseRefs(t *testing.T) {
	dir := bareRepo(t)
	if _, err := Write(dir, "refs/heads/ok", id("ok")); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "refs", "heads", "bad")
	if err := os.WriteFile(bad, []byte("not a hash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := BadLoose(dir, "refs/")
	if err != nil || len(got) != 1 || got["refs/heads/bad"] == "" {
		t.Fatalf("BadLoose = %v, %v", got, err)
	}
	if _, err := Read(dir, "refs/heads/bad"); err == nil {
		t.Error("Read accepted a ref holding garbage")
	}
}

func TestParsePackedRefs(t *testing.T) {
	data := "# pack-refs with: peeled fully-peeled sorted \n" + id("a").String() + " refs/heads/a\n^" + id("peeled").String() + "\n" + id("b").String() + " refs/tags/b\n"
	names, hashes, err := parsePackedRefs([]byte(data))
	if err != nil || len(names) != 2 || names[0] != "refs/heads/a" || hashes[0] != id("a") || names[1] != "refs/tags/b" || hashes[1] != id("b") {
		t.Fatalf("parsePackedRefs = %v, %v, %v", names, hashes, err)
	}
	// A file out of order, with a ref twice: sorted, and the later line
	// wins.
	data = id("c").String() + " refs/heads/c\r\n" + id("a").String() + " refs/heads/a\n" + id("a2").String() + " refs/heads/a\n"
	names, hashes, err = parsePackedRefs([]byte(data))
	if err != nil || len(names) != 2 || names[0] != "refs/heads/a" || hashes[0] != id("a2") || names[1] != "refs/heads/c" || hashes[1] != id("c") {
		t.Fatalf("unsorted parsePackedRefs = %v, %v, %v", names, hashes, err)
	}
	if _, _, err := parsePackedRefs([]byte("zzzz refs/heads/a\n")); err == nil {
		t.Error("a bad packed-refs line parsed")
	}
}

// TestLookupSorted holds the bisection of a sorted packed-refs to the
// parse: every ref found with its value (peeled tags and CRLF line ends
// among them), and names before, between and after them not found.
func TestLookupSorted(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 100, 1001} {
		var b strings.Builder
		b.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
		var names []string
		for i := range n {
			name := fmt.Sprintf("refs/heads/s%05d", 2*i+1)
			names = append(names, name)
			end := "\n"
			if i%5 == 2 {
				end = "\r\n"
			}
			b.WriteString(id(name).String() + " " + name + end)
			if i%7 == 3 {
				b.WriteString("^" + id("peel"+name).String() + "\n")
			}
		}
		data := []byte(b.String())
		if ok, _ := isSorted(data); !ok {
			t.Fatal("the header was not taken for sorted")
		}
		for _, name := range names {
			h, ok, err := lookupSorted(data, name)
			if err != nil || !ok || h != id(name) {
				t.Fatalf("n=%d: lookupSorted(%s) = %v, %v, %v", n, name, h, ok, err)
			}
		}
		for i := 0; i <= 2*n; i += 2 {
			name := fmt.Sprintf("refs/heads/s%05d", i)
			if _, ok, err := lookupSorted(data, name); ok || err != nil {
				t.Fatalf("n=%d: lookupSorted found the absent %s (%v)", n, name, err)
			}
		}
		for _, name := range []string{"refs/heads/", "refs/a", "refs/z", "refs/heads/s0000"} {
			if _, ok, _ := lookupSorted(data, name); ok {
				t.Fatalf("n=%d: lookupSorted found %s", n, name)
			}
		}
	}
	for _, head := range []string{"", "# pack-refs with: peeled\n", "# pack-refs with: peeled fully-peeled unsorted\n"} {
		if ok, _ := isSorted([]byte(head + id("a").String() + " refs/heads/a\n")); ok {
			t.Errorf("%q was taken for sorted", head)
		}
	}
}

// TestReadUnsortedPacked: a packed-refs without the sorted trait (an old
// git's) is parsed, not bisected, and still answers.
func TestReadUnsortedPacked(t *testing.T) {
	dir := t.TempDir()
	data := id("c").String() + " refs/heads/c\n" + id("a").String() + " refs/heads/a\n"
	if err := os.WriteFile(filepath.Join(dir, "packed-refs"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"refs/heads/a", "refs/heads/c"} {
		if h, err := Read(dir, name); err != nil || h != id(name[len("refs/heads/"):]) {
			t.Errorf("Read(%s) = %v, %v", name, h, err)
		}
	}
}

// TestListSorted: the refs under a prefix of a sorted packed-refs, found
// by bisection, are those a parse of the whole file finds, for prefixes
// before, between, inside and after the refs, over peeled lines and CRLF
// endings.
func TestListSorted(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 100, 1001} {
		var b strings.Builder
		b.WriteString("# pack-refs with: peeled fully-peeled sorted \n")
		for i := range n {
			name := fmt.Sprintf("refs/heads/s%03d/%d", i/3, i%3)
			end := "\n"
			if i%5 == 2 {
				end = "\r\n"
			}
			b.WriteString(id(name).String() + " " + name + end)
			if i%7 == 3 {
				b.WriteString("^" + id("peel"+name).String() + "\n")
			}
		}
		data := []byte(b.String())
		names, hashes, err := parsePackedRefs(data)
		if err != nil {
			t.Fatal(err)
		}
		prefixes := []string{"", "refs/", "refs/a", "refs/heads/", "refs/heads/s", "refs/z", "refs/heads/s999/"}
		for i := 0; i <= n/3+1; i++ {
			prefixes = append(prefixes, fmt.Sprintf("refs/heads/s%03d/", i), fmt.Sprintf("refs/heads/s%03d/1", i))
		}
		for _, prefix := range prefixes {
			want := map[string]object.Hash{}
			for k, name := range names {
				if strings.HasPrefix(name, prefix) {
					want[name] = hashes[k]
				}
			}
			got := map[string]object.Hash{}
			if err := listSorted(data, prefix, func(name string, h object.Hash) { got[name] = h }); err != nil {
				t.Fatalf("n=%d prefix %q: %v", n, prefix, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("n=%d prefix %q (-parse +listSorted):\n%s", n, prefix, diff)
			}
		}
	}
}
