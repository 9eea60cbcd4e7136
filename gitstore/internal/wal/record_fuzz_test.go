package wal

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"runtime"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// allocated returns how many bytes f allocated on the heap. The fuzz
// workers run one input at a time (-parallel 1), so nearly all of it is f's.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// FuzzLogRecord: any bytes, read as a log record, are refused or decode to a
// Batch that encodes back to exactly the bytes consumed; and decoding costs
// memory in proportion to the input, whatever its length fields claim.
func FuzzLogRecord(f *testing.F) {
	b := &Batch{
		Updates: []RefUpdate{{Name: "refs/heads/sessions/x/main", New: object.HashObject(object.TypeCommit, []byte("c"))}},
		Objects: []Object{
			{ID: object.HashObject(object.TypeBlob, []byte("hello")), Type: object.TypeBlob, Data: []byte("hello")},
			{ID: object.HashObject(object.TypeBlob, []byte("help")), Type: object.TypeBlob, Base: object.HashObject(object.TypeBlob, []byte("hello")), Edit: delta.Diff([]byte("hello"), []byte("help"))},
		},
	}
	rec := AppendRecord(nil, b)
	f.Add(rec)
	f.Add(append(append([]byte(nil), rec...), rec...))
	f.Add(AppendRecord(nil, &Batch{}))
	// Length fields claiming 4 GiB: the record length, then (with a valid
	// checksum) the update count and a name length.
	f.Add([]byte{0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Add(withChecksum([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}))
	f.Add(withChecksum([]byte{0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}))
	f.Add(withChecksum([]byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}))
	f.Fuzz(func(t *testing.T, p []byte) {
		var got *Batch
		var n int
		var err error
		used := allocated(func() { got, n, err = DecodeRecord(p) })
		if limit := uint64(8192 + 64*len(p)); used > limit {
			t.Fatalf("decoding %d bytes allocated %d bytes (limit %d)", len(p), used, limit)
		}
		if err != nil {
			return
		}
		if n < 8 || n > len(p) {
			t.Fatalf("consumed %d of %d bytes", n, len(p))
		}
		if again := AppendRecord(nil, got); !bytes.Equal(again, p[:n]) {
			t.Fatalf("re-encoding a decoded record changed it:\n%x\n%x", p[:n], again)
		}
	})
}

// withChecksum frames payload as a log record with a correct length and
// checksum, so that the fuzzer starts past the CRC.
func withChecksum(payload []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(payload, castagnoli))
	return append(out, payload...)
}

// FuzzLogBatch: a Batch built from arbitrary names and contents is read
// back from its record exactly, also when another record follows it.
func FuzzLogBatch(f *testing.F) {
	f.Add("refs/heads/sessions/s/main", []byte("the quick brown fox"), []byte("the quick red fox jumps"), uint8(3))
	f.Add("", []byte{}, []byte{0}, uint8(0))
	f.Add("x\x00\xff", []byte("aaaa"), []byte{}, uint8(255))
	f.Fuzz(func(t *testing.T, name string, base, target []byte, shape uint8) {
		b := &Batch{}
		for i := 0; i < int(shape&3); i++ {
			b.Updates = append(b.Updates, RefUpdate{Name: name, Old: object.HashObject(object.TypeCommit, base), New: object.HashObject(object.TypeCommit, target)})
		}
		if shape&4 != 0 {
			b.Objects = append(b.Objects, Object{ID: object.HashObject(object.TypeBlob, base), Type: object.TypeBlob, Data: base})
		}
		if shape&8 != 0 {
			b.Objects = append(b.Objects, Object{ID: object.HashObject(object.TypeBlob, target), Type: object.TypeBlob,
				Base: object.HashObject(object.TypeBlob, base), Edit: delta.Diff(base, target)})
		}
		if shape&16 != 0 {
			b.Objects = append(b.Objects, Object{ID: object.HashObject(object.Type(shape>>5), target), Type: object.Type(shape >> 5), Data: target})
		}
		rec := AppendRecord(nil, b)
		two := AppendRecord(append([]byte(nil), rec...), &Batch{})
		got, n, err := DecodeRecord(two)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if n != len(rec) {
			t.Fatalf("consumed %d bytes, the record has %d", n, len(rec))
		}
		if !bytes.Equal(AppendRecord(nil, got), rec) {
			t.Fatalf("round trip changed the record")
		}
		for i, o := range b.Objects {
			g := got.Objects[i]
			if g.ID != o.ID || g.Type != o.Type || g.Base != o.Base || !bytes.Equal(g.Data, o.Data) {
				t.Fatalf("object %d differs", i)
			}
			if o.Base != object.ZeroHash {
				out, err := g.Edit.Apply(base)
				if err != nil || !bytes.Equal(out, target) {
					t.Fatalf("decoded edit does not rebuild the object: %v", err)
				}
			}
		}
		for i, u := range b.Updates {
			if got.Updates[i] != u {
				t.Fatalf("update %d: got %+v, want %+v", i, got.Updates[i], u)
			}
		}
	})
}
