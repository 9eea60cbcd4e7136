package wal

import (
	"bytes"
	"errors"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

func sample(i byte) *Batch {
	base, target := bytes.Repeat([]byte{'a', i}, 40), bytes.Repeat([]byte{'b', i}, 40)
	return &Batch{
		Updates: []RefUpdate{{Name: "refs/heads/sessions/s/main", Old: object.HashObject(object.TypeCommit, []byte{i}), New: object.HashObject(object.TypeCommit, []byte{i + 1})}},
		Objects: []Object{
			{ID: object.HashObject(object.TypeBlob, base), Type: object.TypeBlob, Data: base},
			{ID: object.HashObject(object.TypeBlob, target), Type: object.TypeBlob, Base: object.HashObject(object.TypeBlob, base), Edit: delta.Diff(base, target)},
		},
	}
}

// TestRecordsFollowOneAnother: records appended to one buffer decode in
// order, each reporting its own length, and the zeros a writer lays down
// ahead of itself read as no record.
func TestRecordsFollowOneAnother(t *testing.T) {
	var log []byte
	var ends []int
	for i := byte(0); i < 3; i++ {
		log = AppendRecord(log, sample(i))
		ends = append(ends, len(log))
	}
	log = append(log, make([]byte, 64)...)
	off := 0
	for i, end := range ends {
		b, n, err := DecodeRecord(log[off:])
		if err != nil || off+n != end {
			t.Fatalf("record %d: %d bytes, %v", i, n, err)
		}
		if b.Updates[0].New != object.HashObject(object.TypeCommit, []byte{byte(i) + 1}) || len(b.Objects) != 2 {
			t.Fatalf("record %d decoded as %+v", i, b)
		}
		off = end
	}
	if RecordLen(log[off:]) != 0 {
		t.Fatal("the zero tail reads as a record length")
	}
	if _, _, err := DecodeRecord(log[off:]); !errors.Is(err, ErrTorn) {
		t.Fatalf("zero tail: %v, want ErrTorn", err)
	}
}

// TestTornAndDamagedRecords: a short record or one failing its checksum is
// ErrTorn; FindRecord skips damage to the next intact record and finds
// none past the last.
func TestTornAndDamagedRecords(t *testing.T) {
	one := AppendRecord(nil, sample(1))
	two := AppendRecord(append([]byte(nil), one...), sample(2))
	if _, _, err := DecodeRecord(one[:len(one)-1]); !errors.Is(err, ErrTorn) {
		t.Errorf("short record: %v", err)
	}
	bad := append([]byte(nil), two...)
	bad[20] ^= 0xff
	if _, _, err := DecodeRecord(bad); !errors.Is(err, ErrTorn) {
		t.Errorf("checksum failure: %v", err)
	}
	if got := FindRecord(bad, 1); got != len(one) {
		t.Errorf("FindRecord after damage = %d, want %d", got, len(one))
	}
	if got := FindRecord(two, len(one)+1); got != -1 {
		t.Errorf("FindRecord past the last record = %d, want -1", got)
	}
	if got := FindRecord(append(two, make([]byte, 32)...), len(two)); got != -1 {
		t.Errorf("FindRecord in the zero tail = %d, want -1", got)
	}
}

// TestChecksummedGarbageDoesNotDecode: a payload with a valid checksum
// whose counts run past its end is refused, never read as a partial batch.
func TestChecksummedGarbageDoesNotDecode(t *testing.T) {
	b, _, err := DecodeRecord(withChecksum([]byte{0, 0, 0, 1, 0, 0, 0, 200}))
	if err == nil || b != nil {
		t.Fatalf("got %+v, %v", b, err)
	}
	if !bytes.HasPrefix(Magic, []byte("TBXLOG")) {
		t.Fatalf("Magic = %q", Magic)
	}
}
