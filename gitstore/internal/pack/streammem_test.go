package pack

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// TestStreamTableBytesPerObject: what a stream keeps per object added,
// across groups, is about an id's room in a set, not an id and an offset:
// a push of the million-thought ledger adds 7.85 M objects. The bound
// (45 bytes) sits between the two: at this count the set of ids takes
// about 38 bytes of heap an object, the table of ids and offsets took 58.
func TestStreamTableBytesPerObject(t *testing.T) {
	s, err := NewStream(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Discard()
	const n = 200_000
	var data [8]byte
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		if i%10 == 0 {
			s.NewGroup() // a session of ten objects, as a push walks them
		}
		binary.BigEndian.PutUint64(data[:], uint64(i))
		if err := s.Add(object.HashObject(object.TypeBlob, data[:]), object.TypeBlob, data[:], object.ZeroHash, nil); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	t.Logf("%.1f bytes of heap an object", per)
	if per > 45 {
		t.Errorf("the stream keeps %.1f bytes an object, want at most 45", per)
	}
	runtime.KeepAlive(s)
}

// TestStreamDeltaBasesWithinGroup: an object of the current group serves
// as a delta base; after NewGroup it is still never sent twice, but a
// later version goes whole rather than as a delta of it, and the pack
// stays one git accepts.
func TestStreamDeltaBasesWithinGroup(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	s, err := NewStream(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Discard()
	v1 := make([]byte, 2000) // random: whole it takes 2,000 bytes, as a delta a few
	r := rand.New(rand.NewPCG(1, 2))
	for i := range v1 {
		v1[i] = byte(r.Uint32())
	}
	v2 := append(bytes.Clone(v1), "one more line\n"...)
	v3 := append(bytes.Clone(v2), "and another\n"...)
	id1, id2, id3 := object.HashObject(object.TypeBlob, v1), object.HashObject(object.TypeBlob, v2), object.HashObject(object.TypeBlob, v3)
	add := func(id object.Hash, data []byte, base object.Hash, baseData []byte) {
		t.Helper()
		if err := s.Add(id, object.TypeBlob, data, base, baseData); err != nil {
			t.Fatal(err)
		}
	}
	add(id1, v1, object.ZeroHash, nil)
	off := s.off
	add(id2, v2, id1, v1)
	if deltaLen := s.off - off; deltaLen > 100 {
		t.Errorf("v2 took %d bytes: not a delta of v1 in the same group", deltaLen)
	}
	s.NewGroup()
	if !s.Has(id1) || !s.Has(id2) {
		t.Error("NewGroup forgot which objects were sent")
	}
	add(id1, v1, object.ZeroHash, nil) // already sent: nothing written
	if s.Count != 2 {
		t.Errorf("count %d after adding v1 again, want 2", s.Count)
	}
	off = s.off
	add(id3, v3, id2, v2)
	if wholeLen := s.off - off; wholeLen < 2000 {
		t.Errorf("v3 took %d bytes: a delta of a base of an earlier group", wholeLen)
	}
	f, _, err := s.Finish()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "index-pack", "--stdin", "--strict")
	cmd.Dir = t.TempDir()
	if out, err := exec.Command("git", "init", "-q", "--bare", cmd.Dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	cmd.Stdin = f
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git index-pack: %v %s", err, out)
	}
}
