package pack

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/idxfile"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// bothWays runs f with indexes mapped and with indexes read by pread (as
// on Windows).
func bothWays(t *testing.T, f func(t *testing.T)) {
	for _, pread := range []bool{false, true} {
		name := "mapped"
		if pread {
			name = "pread"
		}
		t.Run(name, func(t *testing.T) {
			noMap = pread
			t.Cleanup(func() { noMap = false })
			f(t)
		})
	}
}

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
}

func gitOut(t *testing.T, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// showIndex is what `git show-index` reads from an .idx: every entry in
// the index's order.
func showIndex(t *testing.T, idx []byte) []IndexEntry {
	t.Helper()
	var out []IndexEntry
	sc := bufio.NewScanner(strings.NewReader(gitOut(t, idx, "show-index")))
	for sc.Scan() {
		f := strings.Fields(sc.Text()) // offset id (crc)
		if len(f) != 3 {
			t.Fatalf("git show-index: %q", sc.Text())
		}
		off, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		id, err := object.ParseHash(f[1])
		if err != nil {
			t.Fatal(err)
		}
		crc, err := strconv.ParseUint(strings.Trim(f[2], "()"), 16, 32)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, IndexEntry{ID: id, Offset: off, CRC32: uint32(crc)})
	}
	return out
}

// TestIndexAgainstGit: a pack and index written by git itself (blobs
// small and large, compressible and not, deltas of git's choosing) read
// through Index as `git verify-pack -v` and `git show-index` read them,
// and every object reads back whole.
func TestIndexAgainstGit(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	gitOut(t, nil, "init", "-q", "--bare", dir)
	rng := rand.New(rand.NewPCG(1, 2))
	var input bytes.Buffer
	var text []byte
	for i := range 400 {
		var data []byte
		switch {
		case i%97 == 5: // incompressible, larger than a read's window
			data = make([]byte, 20000+rng.IntN(50000))
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
		case i%31 == 7: // compressible and large
			data = bytes.Repeat([]byte(fmt.Sprintf("line of thought %d\n", i)), 3000)
		default: // versions of a growing file, for git to delta
			text = fmt.Appendf(text, "thought %d: %x\n", i, rng.Uint64())
			data = bytes.Clone(text)
		}
		fmt.Fprintf(&input, "%d\n", len(data))
		input.Write(data)
	}
	// One hash-object call for every blob: --stdin-paths needs files, so
	// write them.
	blobs := t.TempDir()
	var paths []string
	r := bytes.NewReader(input.Bytes())
	for i := 0; ; i++ {
		var n int
		if _, err := fmt.Fscanf(r, "%d\n", &n); err != nil {
			break
		}
		data := make([]byte, n)
		r.Read(data)
		p := filepath.Join(blobs, strconv.Itoa(i))
		os.WriteFile(p, data, 0o644)
		paths = append(paths, p)
	}
	ids := gitOut(t, []byte(strings.Join(paths, "\n")+"\n"), "--git-dir", dir, "hash-object", "-w", "--stdin-paths")
	packDir := filepath.Join(dir, "objects", "pack")
	gitOut(t, []byte(ids), "--git-dir", dir, "pack-objects", "-q", "--depth=50", "--window=20", filepath.Join(packDir, "pack"))
	idxs, _ := filepath.Glob(filepath.Join(packDir, "pack-*.idx"))
	if len(idxs) != 1 {
		t.Fatalf("git repack left %d indexes", len(idxs))
	}
	idxBytes, _ := os.ReadFile(idxs[0])
	fromGit := showIndex(t, idxBytes)
	// verify-pack -v: id type size size-in-pack offset [depth base]
	offsets := map[object.Hash]int64{}
	deltas := 0
	for _, line := range strings.Split(gitOut(t, nil, "verify-pack", "-v", idxs[0]), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || len(f[0]) != 40 {
			continue
		}
		id, err := object.ParseHash(f[0])
		if err != nil {
			continue
		}
		off, _ := strconv.ParseInt(f[4], 10, 64)
		offsets[id] = off
		if len(f) == 7 {
			deltas++
		}
	}
	if len(offsets) != len(fromGit) || len(offsets) < 300 || deltas < 100 {
		t.Fatalf("verify-pack listed %d objects (%d deltas), show-index %d", len(offsets), deltas, len(fromGit))
	}
	bothWays(t, func(t *testing.T) {
		ps := openSet(t, packDir)
		x, err := ps.Packs()[0].Index()
		if err != nil {
			t.Fatal(err)
		}
		if x.Count() != len(fromGit) {
			t.Fatalf("Count = %d, git says %d", x.Count(), len(fromGit))
		}
		for i, want := range fromGit {
			if got, err := x.Entry(i); err != nil || got != want {
				t.Fatalf("entry %d: %+v, %v; git show-index says %+v", i, got, err, want)
			}
		}
		for id, want := range offsets {
			if got, err := x.Find(id); err != nil || got != want {
				t.Fatalf("Find(%s) = %d, %v; git verify-pack says %d", id, got, err, want)
			}
			typ, data, err := ps.Read(id)
			if err != nil || object.HashObject(typ, data) != id {
				t.Fatalf("Read(%s): %v, %v", id, typ, err)
			}
			if _, err := ps.ReadRaw(id); err != nil {
				t.Fatalf("ReadRaw(%s): %v", id, err)
			}
		}
		for i := range 300 {
			absent := object.HashObject(object.TypeBlob, fmt.Appendf(nil, "never written %d", i))
			if off, err := x.Find(absent); !errors.Is(err, object.ErrNotFound) {
				t.Fatalf("%s, never written: %d, %v", absent, off, err)
			}
			if ps.Has(absent) {
				t.Fatalf("Has(%s) of an object never written", absent)
			}
		}
		if err := ps.CheckIndexes(); err != nil {
			t.Fatalf("CheckIndexes of git's own index: %v", err)
		}
		offs, err := x.sortedOffsets()
		if err != nil || len(offs) != len(offsets) || !slices.IsSorted(offs) {
			t.Fatalf("sortedOffsets: %d offsets, sorted %v, %v", len(offs), slices.IsSorted(offs), err)
		}
	})
}

// TestIndexOfOurPacksMatchesIndexPack: the index we write for a pack and
// the one `git index-pack` builds from the same pack read the same, entry
// by entry, and agree with go-git's decoder.
func TestIndexOfOurPacksMatchesIndexPack(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	objs := chainObjects(60)
	for i := range 700 {
		data := fmt.Appendf(nil, "blob number %d\n", i)
		objs = append(objs, Object{ID: object.HashObject(object.TypeBlob, data), Type: object.TypeBlob, Data: data, Base: -1})
	}
	name, err := Write(dir, objs)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "pack-"+name.String())
	gitIdx := filepath.Join(t.TempDir(), "git.idx")
	gitOut(t, nil, "index-pack", "-o", gitIdx, base+".pack")
	ours, _ := os.ReadFile(base + ".idx")
	theirs, _ := os.ReadFile(gitIdx)
	bothWays(t, func(t *testing.T) {
		open := func(path string) *Index {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			x, err := openIndex(f)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(x.close)
			return x
		}
		a, b := open(base+".idx"), open(gitIdx)
		if a.Count() != len(objs) || b.Count() != len(objs) {
			t.Fatalf("counts %d and %d, want %d", a.Count(), b.Count(), len(objs))
		}
		for i := range a.Count() {
			ea, err1 := a.Entry(i)
			eb, err2 := b.Entry(i)
			if err1 != nil || err2 != nil || ea != eb {
				t.Fatalf("entry %d: ours %+v (%v), git's %+v (%v)", i, ea, err1, eb, err2)
			}
		}
		for _, x := range []*Index{a, b} {
			if err := x.checkSum(); err != nil {
				t.Fatal(err)
			}
		}
	})
	mi := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bytes.NewReader(ours)).Decode(mi); err != nil {
		t.Fatal(err)
	}
	x, err := indexFromBytes("ours", ours)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		want, err := mi.FindOffset(o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := x.Find(o.ID); err != nil || got != want {
			t.Fatalf("%s: Find = %d, %v; go-git says %d", o.ID, got, err, want)
		}
	}
	if !bytes.Equal(ours[len(ours)-40:len(ours)-20], theirs[len(theirs)-40:len(theirs)-20]) {
		t.Error("the two indexes name different packs")
	}
}

// craftIndex builds a version 2 index of entries (any order), putting
// the offsets of 2 GiB and more in the 64-bit table, as git does.
func craftIndex(entries []IndexEntry) []byte {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b IndexEntry) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	b := bytes.Clone(idxMagic)
	var fan [256]uint32
	for _, e := range entries {
		for k := int(e.ID[0]); k < 256; k++ {
			fan[k]++
		}
	}
	for _, n := range fan {
		b = binary.BigEndian.AppendUint32(b, n)
	}
	for _, e := range entries {
		b = append(b, e.ID[:]...)
	}
	for _, e := range entries {
		b = binary.BigEndian.AppendUint32(b, e.CRC32)
	}
	var big []int64
	for _, e := range entries {
		if e.Offset < 1<<31 {
			b = binary.BigEndian.AppendUint32(b, uint32(e.Offset))
			continue
		}
		b = binary.BigEndian.AppendUint32(b, 0x80000000|uint32(len(big)))
		big = append(big, e.Offset)
	}
	for _, o := range big {
		b = binary.BigEndian.AppendUint64(b, uint64(o))
	}
	b = append(b, bytes.Repeat([]byte{0xab}, 20)...) // the pack's checksum
	sum := sha1.Sum(b)
	return append(b, sum[:]...)
}

// TestIndexLargeOffsets: offsets past 2 GiB come from the 64-bit table
// (a pack that large is impractical to write in a test, so the index is
// built by hand and checked against git's reading of it), and an entry
// pointing past that table is an error, not a panic.
func TestIndexLargeOffsets(t *testing.T) {
	var entries []IndexEntry
	for i := range 40 {
		e := IndexEntry{ID: object.HashObject(object.TypeBlob, fmt.Appendf(nil, "object %d", i)), CRC32: uint32(i) * 0x01010101}
		switch i % 4 {
		case 0:
			e.Offset = int64(12 + i*100)
		case 1:
			e.Offset = 1<<31 - 1 - int64(i) // the largest that fits 31 bits
		case 2:
			e.Offset = 1<<31 + int64(i)
		case 3:
			e.Offset = int64(i+1) << 36
		}
		entries = append(entries, e)
	}
	data := craftIndex(entries)
	want := map[object.Hash]IndexEntry{}
	for _, e := range entries {
		want[e.ID] = e
	}
	if _, err := exec.LookPath("git"); err == nil {
		for _, e := range showIndex(t, data) {
			if want[e.ID] != e {
				t.Fatalf("git show-index reads %+v, we wrote %+v", e, want[e.ID])
			}
		}
	}
	path := filepath.Join(t.TempDir(), "pack-x.idx")
	if err := os.WriteFile(path, data, 0o444); err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, x *Index) {
		t.Helper()
		for i := range x.Count() {
			e, err := x.Entry(i)
			if err != nil || want[e.ID] != e {
				t.Fatalf("entry %d: %+v, %v; want %+v", i, e, err, want[e.ID])
			}
			if off, err := x.Find(e.ID); err != nil || off != e.Offset {
				t.Fatalf("Find(%s) = %d, %v; want %d", e.ID, off, err, e.Offset)
			}
		}
		offs, err := x.sortedOffsets()
		if err != nil || len(offs) != len(entries) || !slices.IsSorted(offs) || offs[len(offs)-1] != 40<<36 {
			t.Fatalf("sortedOffsets: %v, %v", offs, err)
		}
		if err := x.checkSum(); err != nil {
			t.Fatal(err)
		}
	}
	bothWays(t, func(t *testing.T) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		x, err := openIndex(f)
		if err != nil {
			t.Fatal(err)
		}
		defer x.close()
		check(t, x)
	})
	x, err := indexFromBytes("crafted", data)
	if err != nil {
		t.Fatal(err)
	}
	check(t, x)

	// An entry naming a 64-bit slot past the table.
	bad := bytes.Clone(data)
	n := len(entries)
	var victim int
	for i := range n {
		at := idxNamesAt + 24*n + 4*i
		if bad[at]&0x80 != 0 {
			binary.BigEndian.PutUint32(bad[at:], 0x80000000|uint32(n))
			victim = i
			break
		}
	}
	y, err := indexFromBytes("bad", bad)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := x.Entry(victim)
	if off, err := y.Find(e.ID); err == nil {
		t.Fatalf("an offset past the 64-bit table read as %d", off)
	}
	if _, err := y.sortedOffsets(); err == nil {
		t.Fatal("sortedOffsets over an offset past the 64-bit table: no error")
	}
	if err := y.checkSum(); err == nil {
		t.Fatal("a changed index passed its checksum")
	}
}

// smallIndex is the index Write makes for a few objects, and the objects.
func smallIndex(t testing.TB) ([]byte, []Object) {
	dir := t.TempDir()
	objs := chainObjects(12)
	name, err := Write(dir, objs)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "pack-"+name.String()+".idx"))
	if err != nil {
		t.Fatal(err)
	}
	return data, objs
}

// TestIndexRefusesDamage: an index cut anywhere, or with the header, the
// fanout or the size wrong, is refused when it is opened; one with any
// byte changed fails its checksum; reading either never panics.
func TestIndexRefusesDamage(t *testing.T) {
	good, objs := smallIndex(t)
	if _, err := indexFromBytes("good", good); err != nil {
		t.Fatal(err)
	}
	for n := range len(good) {
		if _, err := indexFromBytes("cut", good[:n]); err == nil {
			t.Fatalf("an index cut to %d of %d bytes opened", n, len(good))
		}
	}
	if _, err := indexFromBytes("long", append(craftIndex(nil), make([]byte, 8)...)); err == nil {
		t.Fatal("an empty index with 8 bytes more opened")
	}
	if _, err := indexFromBytes("long", append(bytes.Clone(good), make([]byte, 8*len(objs))...)); err == nil {
		t.Fatal("an index with more 64-bit offsets than objects opened")
	}
	v1 := bytes.Clone(good)
	v1[7] = 1
	if _, err := indexFromBytes("v1", v1); err == nil || !strings.Contains(err.Error(), "version 1") {
		t.Fatalf("a version 1 index: %v", err)
	}
	for at := range len(good) {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(good)
			bad[at] ^= mask
			x, err := indexFromBytes("flipped", bad)
			if err != nil {
				continue
			}
			readIndex(x, objs)
			if err := x.checkSum(); err == nil {
				t.Fatalf("byte %d ^ %#x: the checksum did not notice", at, mask)
			}
		}
	}
}

// readIndex looks up every object and reads every entry, as a reader of a
// damaged index would: errors are fine, panics are not.
func readIndex(x *Index, objs []Object) {
	for _, o := range objs {
		x.Find(o.ID)
	}
	for i := range min(x.Count(), 4096) {
		if e, err := x.Entry(i); err == nil {
			x.Find(e.ID)
		}
	}
	x.sortedOffsets()
}

// FuzzIndex: any bytes as an index open with an error or read without a
// panic, and an index whose names are in order (as the fanout says)
// finds every entry at its own offset.
func FuzzIndex(f *testing.F) {
	good, objs := smallIndex(f)
	f.Add(good)
	f.Add(craftIndex([]IndexEntry{{ID: objs[0].ID, Offset: 5 << 32}, {ID: objs[1].ID, Offset: 12}}))
	f.Add(craftIndex(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := indexFromBytes("fuzz", data)
		if err != nil {
			return
		}
		if x.Count() > len(data)/idxPerEntry {
			t.Fatalf("%d objects claimed in %d bytes were accepted", x.Count(), len(data))
		}
		readIndex(x, objs)
		n := min(x.Count(), 4096)
		entries := make([]IndexEntry, n)
		ordered := n == x.Count()
		for i := range n {
			var err error
			if entries[i], err = x.Entry(i); err != nil {
				ordered = false
			}
			id := entries[i].ID
			if i > 0 && bytes.Compare(entries[i-1].ID[:], id[:]) >= 0 ||
				int(x.fanout[id[0]]) <= i || id[0] > 0 && int(x.fanout[id[0]-1]) > i {
				ordered = false
			}
		}
		if !ordered {
			return
		}
		for i, e := range entries {
			if off, err := x.Find(e.ID); err != nil || off != e.Offset {
				t.Fatalf("entry %d (%s at %d): Find = %d, %v", i, e.ID, e.Offset, off, err)
			}
		}
		x.checkSum()
	})
}
