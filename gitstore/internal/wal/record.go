// Package wal is the write-ahead log: its record format (a batch of
// objects and ref moves, framed as u32 payload length, u32 CRC-32C of the
// payload, payload), the log file shared by processes (Log: open, file
// lock, replay, append, trim) and group commit (Group). What a replayed
// record means — the overlay of refs and objects, compare-and-swap, the
// flush to packs — belongs to the disk repository (gitstore/internal/repo),
// which calls in here under its own lock.
package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// Object is an object as the store produces it: whole, or as an edit of an
// earlier version of the same path (Base).
type Object struct {
	ID   object.Hash
	Type object.Type
	Base object.Hash // ZeroHash: Data holds the whole object
	Data []byte
	Edit delta.Edit
	// Whole is the content of an object logged as an edit, when its
	// builder has it at hand; it lets the in-memory repository (repo.Mem)
	// store a version whole without rebuilding it from its edit chain. It is
	// never encoded, and only read during apply: the builder reuses the
	// buffer afterwards.
	Whole []byte
}

// RefUpdate moves a ref by compare-and-swap: from Old (ZeroHash: the ref
// must not exist) to New (ZeroHash: the ref is deleted).
type RefUpdate struct {
	Name     string
	Old, New object.Hash
}

// Batch is one atomic, durable change: its objects and the ref moves that
// publish them.
type Batch struct {
	Objects []Object
	Updates []RefUpdate
}

// The write-ahead log holds batches that are durable but not yet in the Git
// object store. A record is: u32 payload length, u32 CRC-32C of the payload,
// payload. A record whose length or checksum does not match is a torn write
// from a crash before the fsync, and was never acknowledged.

// Magic names the log format; it changes whenever the record layout does
// (2: edits are op lists), so an old log is refused rather than misread.
var Magic = []byte("TBXLOG2\n")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var ErrTorn = errors.New("torn log record")

func appendU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

func appendBytes(b, p []byte) []byte {
	b = appendU32(b, uint32(len(p)))
	return append(b, p...)
}

// AppendRecord appends b as one log record to dst.
func AppendRecord(dst []byte, b *Batch) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // length and checksum, filled below
	dst = appendU32(dst, uint32(len(b.Updates)))
	for _, u := range b.Updates {
		dst = appendBytes(dst, []byte(u.Name))
		dst = append(dst, u.Old[:]...)
		dst = append(dst, u.New[:]...)
	}
	dst = appendU32(dst, uint32(len(b.Objects)))
	for _, o := range b.Objects {
		dst = append(dst, o.ID[:]...)
		dst = append(dst, byte(o.Type))
		dst = append(dst, o.Base[:]...)
		if o.Base == object.ZeroHash {
			dst = appendBytes(dst, o.Data)
		} else {
			dst = appendU32(dst, uint32(len(o.Edit.Ops)))
			for _, p := range o.Edit.Ops {
				if p.Data != nil {
					dst = append(dst, 1)
					dst = appendBytes(dst, p.Data)
				} else {
					dst = append(dst, 0)
					dst = appendU32(dst, uint32(p.Off))
					dst = appendU32(dst, uint32(p.N))
				}
			}
		}
	}
	payload := dst[start+8:]
	binary.BigEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, castagnoli))
	return dst
}

type recordReader struct {
	p   []byte
	err error
}

func (r *recordReader) u32() uint32 {
	if r.err != nil || len(r.p) < 4 {
		r.err = ErrTorn
		return 0
	}
	v := binary.BigEndian.Uint32(r.p)
	r.p = r.p[4:]
	return v
}

func (r *recordReader) bytes(n int) []byte {
	if r.err != nil || n < 0 || len(r.p) < n {
		r.err = ErrTorn
		return nil
	}
	v := r.p[:n:n]
	r.p = r.p[n:]
	return v
}

func (r *recordReader) hash() object.Hash {
	var h object.Hash
	copy(h[:], r.bytes(20))
	return h
}

// DecodeRecord reads one record from p and returns it and its size. It
// returns ErrTorn when p does not start with a whole, intact record.
func DecodeRecord(p []byte) (*Batch, int, error) {
	if len(p) < 8 {
		return nil, 0, ErrTorn
	}
	n := int(binary.BigEndian.Uint32(p))
	sum := binary.BigEndian.Uint32(p[4:])
	if len(p) < 8+n {
		return nil, 0, ErrTorn
	}
	payload := p[8 : 8+n]
	if crc32.Checksum(payload, castagnoli) != sum {
		return nil, 0, ErrTorn
	}
	r := &recordReader{p: payload}
	b := &Batch{}
	nu := int(r.u32())
	for i := 0; i < nu && r.err == nil; i++ {
		name := string(r.bytes(int(r.u32())))
		b.Updates = append(b.Updates, RefUpdate{Name: name, Old: r.hash(), New: r.hash()})
	}
	no := int(r.u32())
	for i := 0; i < no && r.err == nil; i++ {
		o := Object{ID: r.hash()}
		t := r.bytes(1)
		if r.err != nil {
			break
		}
		o.Type = object.Type(t[0])
		o.Base = r.hash()
		if o.Base == object.ZeroHash {
			o.Data = r.bytes(int(r.u32()))
		} else {
			nops := int(r.u32())
			for j := 0; j < nops && r.err == nil; j++ {
				kind := r.bytes(1)
				if r.err != nil {
					break
				}
				if kind[0] == 1 {
					o.Edit.Ops = append(o.Edit.Ops, delta.Op{Data: r.bytes(int(r.u32()))})
				} else {
					o.Edit.Ops = append(o.Edit.Ops, delta.Op{Off: int(r.u32()), N: int(r.u32())})
				}
			}
		}
		b.Objects = append(b.Objects, o)
	}
	if r.err != nil {
		return nil, 0, fmt.Errorf("log record with a valid checksum does not decode: %w", r.err)
	}
	return b, 8 + n, nil
}

// FindRecord returns the offset of the first intact record in data at or
// after from, or -1. It tries every offset, since a damaged length field
// gives no hint where the next record starts; a false match needs a
// CRC-32C and a full decode to agree by chance. A record is never empty,
// and the log's zero-filled tail is not a record.
func FindRecord(data []byte, from int) int {
	for off := from; off+8 <= len(data); off++ {
		n := int(binary.BigEndian.Uint32(data[off:]))
		if n == 0 || off+8+n > len(data) {
			continue
		}
		if _, _, err := DecodeRecord(data[off : off+8+n]); err == nil {
			return off
		}
	}
	return -1
}

// RecordLen reads the payload length at the start of a record header; 0
// marks the zeros a writer lays down ahead of its records.
func RecordLen(hdr []byte) int64 { return int64(binary.BigEndian.Uint32(hdr)) }
