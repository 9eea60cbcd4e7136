package pack

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// gitBlobs writes blobs into the bare repository dir with git (versions
// of growing files, for git to delta, and some that are not) and returns
// their ids, one a line.
func gitBlobs(t *testing.T, dir string, n int, extra ...[]byte) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	files := t.TempDir()
	var paths []string
	texts := make([][]byte, 5)
	for i := range n {
		var data []byte
		switch {
		case i%53 == 11:
			data = make([]byte, 3000+rng.IntN(9000))
			for j := range data {
				data[j] = byte(rng.Uint32())
			}
		default:
			k := i % len(texts)
			texts[k] = fmt.Appendf(texts[k], "file %d, thought %d: %x\n", k, i, rng.Uint64())
			data = bytes.Clone(texts[k])
		}
		extra = append(extra, data)
	}
	for i, data := range extra {
		p := filepath.Join(files, strconv.Itoa(i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return gitOut(t, []byte(strings.Join(paths, "\n")+"\n"), "--git-dir", dir, "hash-object", "-w", "--stdin-paths")
}

// gitPack has git pack the objects ids (one a line) with args and returns
// the pack and git's own index of it.
func gitPack(t *testing.T, dir, ids string, args ...string) (pack, idx []byte) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "p")
	sum := strings.TrimSpace(gitOut(t, []byte(ids), append([]string{"--git-dir", dir, "pack-objects", "-q"}, append(args, out)...)...))
	pack, err := os.ReadFile(out + "-" + sum + ".pack")
	if err != nil {
		t.Fatal(err)
	}
	if idx, err = os.ReadFile(out + "-" + sum + ".idx"); err != nil {
		t.Fatal(err)
	}
	return pack, idx
}

// install runs Install on pack and returns the index it wrote.
func install(t *testing.T, pack []byte) (packDir string, idx []byte, count int) {
	t.Helper()
	packDir = t.TempDir()
	count, size, err := Install(filepath.Join(t.TempDir(), "transfer"), packDir, bytes.NewReader(pack))
	if err != nil {
		t.Fatalf("Install: %v", err)
	}
	if size != int64(len(pack)) {
		t.Fatalf("Install read %d bytes of %d", size, len(pack))
	}
	sum := pack[len(pack)-20:]
	idx, err = os.ReadFile(filepath.Join(packDir, fmt.Sprintf("pack-%x.idx", sum)))
	if err != nil {
		t.Fatal(err)
	}
	return packDir, idx, count
}

// deltaCounts counts the OFS and REF deltas of a pack, as its entries say.
func deltaCounts(t *testing.T, packDir string) (ofs, ref int) {
	t.Helper()
	ps := openSet(t, packDir)
	x, err := ps.Packs()[0].Index()
	if err != nil {
		t.Fatal(err)
	}
	for i := range x.Count() {
		e, _ := x.Entry(i)
		re, err := ps.ReadRaw(e.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case re.RefDelta:
			ref++
		case re.BaseOff >= 0:
			ofs++
		}
		typ, data, err := ps.Read(e.ID)
		if err != nil || object.HashObject(typ, data) != e.ID {
			t.Fatalf("Read(%s) of the installed pack: %v", e.ID, err)
		}
	}
	return ofs, ref
}

// TestIndexerMatchesGit: the index Install writes for packs made by git
// pack-objects, with OFS deltas or with REF deltas, is byte for byte the
// one git wrote; with a low large-offset threshold, it is byte for byte
// what git index-pack writes with the same threshold.
func TestIndexerMatchesGit(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	gitOut(t, nil, "init", "-q", "--bare", dir)
	ids := gitBlobs(t, dir, 400)
	for _, c := range []struct {
		name  string
		args  []string
		ofs   bool
		cache int
	}{
		{"ofs deltas", []string{"--delta-base-offset", "--depth=50", "--window=20"}, true, indexCacheSize},
		{"ref deltas", []string{"--depth=50", "--window=20"}, false, indexCacheSize},
		// Every base read again from the pack, through chains of deltas.
		{"ofs deltas, no cache", []string{"--delta-base-offset", "--depth=50", "--window=20"}, true, 0},
		{"ref deltas, no cache", []string{"--depth=50", "--window=20"}, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func(n int) { indexCacheSize = n }(indexCacheSize)
			indexCacheSize = c.cache
			pack, want := gitPack(t, dir, ids, c.args...)
			packDir, got, count := install(t, pack)
			if !bytes.Equal(got, want) {
				t.Fatalf("Install's index (%d bytes) differs from git's (%d bytes)", len(got), len(want))
			}
			if count != len(strings.Fields(ids)) {
				t.Fatalf("Install counted %d objects, git packed %d", count, len(strings.Fields(ids)))
			}
			ofs, ref := deltaCounts(t, packDir)
			if c.ofs && (ofs < 100 || ref != 0) || !c.ofs && (ref < 100 || ofs != 0) {
				t.Fatalf("the pack holds %d OFS and %d REF deltas", ofs, ref)
			}
			// Large offsets: every offset above 1000 goes to the 64-bit table.
			p := filepath.Join(t.TempDir(), "x.pack")
			os.WriteFile(p, pack, 0o644)
			gitOut(t, nil, "index-pack", "--index-version=2,1000", "-o", p+".idx", p)
			want, _ = os.ReadFile(p + ".idx")
			f, _ := os.Open(p)
			defer f.Close()
			entries, err := indexPack(f, int64(len(pack)), count)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			var sum object.Hash
			copy(sum[:], pack[len(pack)-20:])
			if err := writeIndexV2(&buf, entries, sum, 1000); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("the index with large offsets (%d bytes) differs from git index-pack's (%d bytes)", buf.Len(), len(want))
			}
			x, err := indexFromBytes("large", buf.Bytes())
			if err != nil || x.big < int64(count)/2 {
				t.Fatalf("the index has %d large offsets of %d objects: %v", x.big, count, err)
			}
		})
	}
}

// TestIndexerLargeObjects: objects too large for the indexer's window are
// inflated as streams, the largest hashed without being held, and deltas
// of them resolved by reading them again; the index is git's.
func TestIndexerLargeObjects(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	gitOut(t, nil, "init", "-q", "--bare", dir)
	huge := bytes.Repeat([]byte("a long thought, repeated over and over. "), (streamHashSize+1<<20)/40)
	huge2 := append(bytes.Clone(huge[:len(huge)/2]), []byte("an edit in the middle")...)
	huge2 = append(huge2, huge[len(huge)/2:]...)
	mid := bytes.Repeat([]byte("a thought of middling size. "), (maxIndexWindow+1<<20)/28)
	ids := gitBlobs(t, dir, 20, huge, huge2, mid)
	pack, want := gitPack(t, dir, ids, "--delta-base-offset")
	packDir, got, _ := install(t, pack)
	if !bytes.Equal(got, want) {
		t.Fatalf("Install's index (%d bytes) differs from git's (%d bytes)", len(got), len(want))
	}
	deltaCounts(t, packDir)
}

// entrySpec is one entry of a pack written by hand: a whole object, or a
// delta of another entry by offset (ofs >= 0) or by id.
type entrySpec struct {
	typ  object.Type
	data []byte // the object, whole
	ofs  int    // an OFS_DELTA of entry ofs; -1 for none
	ref  *object.Hash
	base []byte // the delta's base, whole
	// long compresses byte by byte, a flush after each: a stream far
	// longer than zlib makes them.
	long bool
}

// craftPack writes entries as a pack, in the order given.
func craftPack(specs []entrySpec) []byte {
	var p bytes.Buffer
	p.WriteString("PACK")
	binary.Write(&p, binary.BigEndian, uint32(2))
	binary.Write(&p, binary.BigEndian, uint32(len(specs)))
	offs := make([]int64, len(specs))
	for i, s := range specs {
		offs[i] = int64(p.Len())
		payload := s.data
		var head []byte
		switch {
		case s.ofs >= 0:
			payload = delta.Diff(s.base, s.data).GitDelta(len(s.base))
			head = appendOfsOffset(entryHeader(ofsDeltaType, len(payload)), offs[i]-offs[s.ofs])
		case s.ref != nil:
			payload = delta.Diff(s.base, s.data).GitDelta(len(s.base))
			head = append(entryHeader(refDeltaType, len(payload)), s.ref[:]...)
		default:
			head = entryHeader(int(s.typ), len(payload))
		}
		p.Write(head)
		zw := zlib.NewWriter(&p)
		if s.long {
			for i := range payload {
				zw.Write(payload[i : i+1])
				zw.Flush()
			}
		} else {
			zw.Write(payload)
		}
		zw.Close()
	}
	sum := sha1.Sum(p.Bytes())
	p.Write(sum[:])
	return p.Bytes()
}

// versions returns n versions of a thought, each a little longer.
func versions(n int) [][]byte {
	var out [][]byte
	text := []byte(strings.Repeat("the first line of a thought that is long enough to delta\n", 20))
	for i := range n {
		text = fmt.Appendf(bytes.Clone(text), "version %d adds a line\n", i)
		out = append(out, text)
	}
	return out
}

func idOf(data []byte) *object.Hash {
	id := object.HashObject(object.TypeBlob, data)
	return &id
}

// TestIndexerDeltasBeforeBases: REF deltas whose bases come later in the
// pack, an OFS delta of such a delta, and a REF delta of that one (whose
// base's id is known only once two deltas are resolved) are all
// resolved, and the index is git index-pack's.
func TestIndexerDeltasBeforeBases(t *testing.T) {
	needGit(t)
	v := versions(5)
	blob := object.TypeBlob
	pack := craftPack([]entrySpec{
		{typ: blob, data: v[1], ofs: -1, ref: idOf(v[0]), base: v[0]}, // 0: base is entry 3
		{typ: blob, data: v[2], ofs: 0, base: v[1]},                   // 1: of a pending delta
		{typ: blob, data: v[3], ofs: -1, ref: idOf(v[2]), base: v[2]}, // 2: of entry 1
		{typ: blob, data: v[0], ofs: -1},                              // 3
		{typ: blob, data: v[4], ofs: 3, base: v[0]},                   // 4: resolved in the pass
	})
	packDir, got, count := install(t, pack)
	if count != 5 {
		t.Fatalf("count %d", count)
	}
	p := filepath.Join(t.TempDir(), "x.pack")
	os.WriteFile(p, pack, 0o644)
	gitOut(t, nil, "index-pack", "-o", p+".idx", p)
	want, _ := os.ReadFile(p + ".idx")
	if !bytes.Equal(got, want) {
		t.Fatalf("Install's index differs from git index-pack's")
	}
	ps := openSet(t, packDir)
	for _, data := range v {
		if _, got, err := ps.Read(*idOf(data)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Read: %v", err)
		}
	}
}

// TestIndexerLongStreams: entries whose zlib streams are longer than the
// bound the indexer's window assumes (written a byte and a flush at a
// time) are read as streams, and the index is git index-pack's.
func TestIndexerLongStreams(t *testing.T) {
	needGit(t)
	v := versions(3)
	// Its stream is longer than the indexer's window, too.
	v = append(v, bytes.Repeat([]byte("a long stream "), 200<<10/14))
	blob := object.TypeBlob
	pack := craftPack([]entrySpec{
		{typ: blob, data: v[0], ofs: -1, long: true},
		{typ: blob, data: v[1], ofs: 0, base: v[0], long: true},
		{typ: blob, data: v[3], ofs: -1, long: true},
		{typ: blob, data: v[2], ofs: -1},
	})
	if h, _ := parseEntryHead(pack[12:], 12, int64(len(pack)-32)); zlibLen(t, pack[12+h.n:]) <= int(zlibBound(len(v[0]))) {
		t.Fatal("the stream is not longer than the bound")
	}
	if len(pack) < indexWindow+100<<10 { // the other entries take a few KB
		t.Fatalf("the pack (%d bytes) is not longer than the window", len(pack))
	}
	packDir, got, _ := install(t, pack)
	p := filepath.Join(t.TempDir(), "x.pack")
	os.WriteFile(p, pack, 0o644)
	gitOut(t, nil, "index-pack", "-o", p+".idx", p)
	want, _ := os.ReadFile(p + ".idx")
	if !bytes.Equal(got, want) {
		t.Fatalf("Install's index differs from git index-pack's")
	}
	ps := openSet(t, packDir)
	for _, data := range v {
		if _, got, err := ps.Read(*idOf(data)); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("Read: %v", err)
		}
	}
}

// TestIndexerRefusesUnresolvable: a delta whose base is not in the pack
// (a thin pack, hand-made or git's) and an OFS delta whose offset is not
// an entry's are refused with an error that says so, and nothing is
// installed.
func TestIndexerRefusesUnresolvable(t *testing.T) {
	v := versions(3)
	blob := object.TypeBlob
	thin := craftPack([]entrySpec{
		{typ: blob, data: v[0], ofs: -1},
		{typ: blob, data: v[2], ofs: -1, ref: idOf(v[1]), base: v[1]},
	})
	misplaced := craftPack([]entrySpec{
		{typ: blob, data: v[0], ofs: -1},
		{typ: blob, data: v[1], ofs: 0, base: v[0]},
	})
	// The delta's offset is made to point one byte into the first entry.
	h, _ := parseEntryHead(misplaced[12:], 12, int64(len(misplaced)-32))
	second := 12 + h.n + zlibLen(t, misplaced[12+h.n:])
	misplaced = bytes.Clone(misplaced)
	hd, _ := parseEntryHead(misplaced[second:], int64(second), int64(len(misplaced)-20-second))
	if hd.typ != ofsDeltaType || hd.n != 3 || misplaced[second+2] != byte(second-12) {
		t.Fatalf("unexpected header % x", misplaced[second:second+4])
	}
	misplaced[second+2]--
	resum(misplaced)
	cases := []struct {
		name string
		pack []byte
		want string
	}{
		{"thin", thin, "not among the objects of the pack"},
		{"misplaced base", misplaced, "is not the start of an object"},
	}
	if _, err := exec.LookPath("git"); err == nil {
		dir := t.TempDir()
		gitOut(t, nil, "init", "-q", dir)
		for n, text := range versions(2) {
			os.WriteFile(filepath.Join(dir, "thought"), text, 0o644)
			gitOut(t, nil, "-C", dir, "add", "thought")
			gitOut(t, nil, "-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", strconv.Itoa(n))
		}
		gitThin := []byte(gitOut(t, []byte("HEAD\n^HEAD~1\n"), "-C", dir, "pack-objects", "--revs", "--thin", "--stdout", "-q"))
		cases = append(cases, struct {
			name string
			pack []byte
			want string
		}{"git thin pack", gitThin, "not among the objects of the pack"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmp, packDir := filepath.Join(t.TempDir(), "transfer"), t.TempDir()
			_, _, err := Install(tmp, packDir, bytes.NewReader(c.pack))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Install: %v, want an error with %q", err, c.want)
			}
			for _, d := range []string{tmp, packDir} {
				if left, _ := os.ReadDir(d); len(left) != 0 {
					t.Errorf("a refused pack left %d files in %s", len(left), d)
				}
			}
		})
	}
}

// zlibLen is the length of the zlib stream at the start of z.
func zlibLen(t *testing.T, z []byte) int {
	t.Helper()
	r := bytes.NewReader(z)
	zr, err := zlib.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(zr); err != nil {
		t.Fatal(err)
	}
	return len(z) - r.Len()
}

func resum(p []byte) []byte {
	sum := sha1.Sum(p[:len(p)-20])
	copy(p[len(p)-20:], sum[:])
	return p
}

// TestIndexerRefusesDamage: a pack whose header, sizes or framing lie is
// refused with an error naming what is wrong.
func TestIndexerRefusesDamage(t *testing.T) {
	v := versions(2)
	blob := object.TypeBlob
	good := craftPack([]entrySpec{{typ: blob, data: v[0], ofs: -1}, {typ: blob, data: v[1], ofs: 0, base: v[0]}})
	withCount := func(n uint32) []byte {
		p := bytes.Clone(good)
		binary.BigEndian.PutUint32(p[8:], n)
		return resum(p)
	}
	junk := append(bytes.Clone(good[:len(good)-20]), 0, 0, 0)
	junk = resum(append(junk, make([]byte, 20)...))
	v4 := bytes.Clone(good)
	v4[7] = 4
	flipped := bytes.Clone(good)
	flipped[40] ^= 0x10
	for _, c := range []struct {
		name string
		pack []byte
		want string
	}{
		{"count too high", withCount(3), "ends after 2 of its 3 objects"},
		{"count too low", withCount(1), "follow the last of its 1 objects"},
		{"junk", junk, "3 bytes follow"},
		{"version", resum(v4), "version 4"},
		{"checksum", flipped, "trailing checksum does not match"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Install(filepath.Join(t.TempDir(), "transfer"), t.TempDir(), bytes.NewReader(c.pack))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Install: %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestIndexerDamageSweep: every truncation of a pack git made (with OFS
// and REF deltas) is refused, and so is every single flipped byte (the
// checksum recomputed, so that the entries themselves are tested), unless
// git's own index-pack takes the damaged pack too and writes the same
// index. Nothing panics.
func TestIndexerDamageSweep(t *testing.T) {
	needGit(t)
	dir := t.TempDir()
	gitOut(t, nil, "init", "-q", "--bare", dir)
	ids := gitBlobs(t, dir, 30)
	for _, args := range [][]string{{"--delta-base-offset"}, nil} {
		pack, _ := gitPack(t, dir, ids, args...)
		step := max(1, len(pack)/400)
		for n := 1; n < len(pack); n += step {
			if _, _, err := Install(filepath.Join(t.TempDir(), "t"), t.TempDir(), bytes.NewReader(pack[:n])); err == nil {
				t.Fatalf("a pack cut to %d of %d bytes was installed", n, len(pack))
			}
		}
		accepted := 0
		for i := 0; i < len(pack)-20; i += step {
			for _, mask := range []byte{0x01, 0x80} {
				bad := bytes.Clone(pack)
				bad[i] ^= mask
				resum(bad)
				packDir := t.TempDir()
				if _, _, err := Install(filepath.Join(t.TempDir(), "t"), packDir, bytes.NewReader(bad)); err != nil {
					continue
				}
				accepted++
				p := filepath.Join(t.TempDir(), "x.pack")
				os.WriteFile(p, bad, 0o644)
				cmd := exec.Command("git", "index-pack", "-o", p+".idx", p)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("byte %d ^ %#x: Install took a pack git index-pack refuses: %s", i, mask, out)
				}
				want, _ := os.ReadFile(p + ".idx")
				got, _ := os.ReadFile(filepath.Join(packDir, fmt.Sprintf("pack-%x.idx", bad[len(bad)-20:])))
				if !bytes.Equal(got, want) {
					t.Fatalf("byte %d ^ %#x: Install's index differs from git index-pack's", i, mask)
				}
			}
		}
		t.Logf("%d-byte pack: %d damaged versions accepted (git accepts them too)", len(pack), accepted)
	}
}

// TestTrailHasher: the hash covers all but the last 20 bytes, however the
// writes are cut.
func TestTrailHasher(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, size := range []int{0, 1, 19, 20, 21, 40, 1000} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		th := &trailHasher{h: sha1.New()}
		for rest := data; len(rest) > 0; {
			n := min(len(rest), rng.IntN(25))
			th.Write(rest[:n])
			rest = rest[n:]
		}
		cut := max(size-20, 0)
		want := sha1.Sum(data[:cut])
		if !bytes.Equal(th.h.Sum(nil), want[:]) || th.n != size-cut || !bytes.Equal(th.tail[:th.n], data[cut:]) {
			t.Fatalf("%d bytes: wrong hash or tail", size)
		}
	}
}

// FuzzIndexPack: whatever the bytes, indexing gives an index or an error,
// never a panic, and an index it gives reads back.
func FuzzIndexPack(f *testing.F) {
	v := versions(3)
	blob := object.TypeBlob
	f.Add(craftPack([]entrySpec{{typ: blob, data: v[0], ofs: -1}, {typ: blob, data: v[1], ofs: 0, base: v[0]}}))
	f.Add(craftPack([]entrySpec{{typ: blob, data: v[1], ofs: -1, ref: idOf(v[0]), base: v[0]}, {typ: blob, data: v[0], ofs: -1}}))
	f.Fuzz(func(t *testing.T, pack []byte) {
		p := filepath.Join(t.TempDir(), "f.pack")
		if err := os.WriteFile(p, pack, 0o644); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		count, err := checkPackHeader(fh, int64(len(pack)))
		if err != nil {
			return
		}
		entries, err := indexPack(fh, int64(len(pack)), count)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := writeIndexV2(&buf, entries, object.ZeroHash, 1<<31-1); err != nil {
			t.Fatal(err)
		}
		x, err := indexFromBytes("fuzz", buf.Bytes())
		if err != nil || x.Count() != count {
			t.Fatalf("the index written does not read back: %v", err)
		}
	})
}
