package gitstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
)

// The write-ahead log holds batches that are durable but not yet in the Git
// object store. A record is: u32 payload length, u32 CRC-32C of the payload,
// payload. A record whose length or checksum does not match is a torn write
// from a crash before the fsync, and was never acknowledged.

// walMagic names the log format; it changes whenever the record layout does
// (2: edits are op lists), so an old log is refused rather than misread.
var walMagic = []byte("TBXLOG2\n")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errTorn = errors.New("torn log record")

func appendU32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }

func appendBytes(b, p []byte) []byte {
	b = appendU32(b, uint32(len(p)))
	return append(b, p...)
}

// encodeRecord appends b as one log record to dst.
func encodeRecord(dst []byte, b *batch) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // length and checksum, filled below
	dst = appendU32(dst, uint32(len(b.updates)))
	for _, u := range b.updates {
		dst = appendBytes(dst, []byte(u.name))
		dst = append(dst, u.old[:]...)
		dst = append(dst, u.new[:]...)
	}
	dst = appendU32(dst, uint32(len(b.objects)))
	for _, o := range b.objects {
		dst = append(dst, o.id[:]...)
		dst = append(dst, byte(o.typ))
		dst = append(dst, o.base[:]...)
		if o.base == zeroHash {
			dst = appendBytes(dst, o.data)
		} else {
			dst = appendU32(dst, uint32(len(o.ed.Ops)))
			for _, p := range o.ed.Ops {
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
		r.err = errTorn
		return 0
	}
	v := binary.BigEndian.Uint32(r.p)
	r.p = r.p[4:]
	return v
}

func (r *recordReader) bytes(n int) []byte {
	if r.err != nil || n < 0 || len(r.p) < n {
		r.err = errTorn
		return nil
	}
	v := r.p[:n:n]
	r.p = r.p[n:]
	return v
}

func (r *recordReader) hash() hash {
	var h hash
	copy(h[:], r.bytes(20))
	return h
}

// decodeRecord reads one record from p and returns it and its size. It
// returns errTorn when p does not start with a whole, intact record.
func decodeRecord(p []byte) (*batch, int, error) {
	if len(p) < 8 {
		return nil, 0, errTorn
	}
	n := int(binary.BigEndian.Uint32(p))
	sum := binary.BigEndian.Uint32(p[4:])
	if len(p) < 8+n {
		return nil, 0, errTorn
	}
	payload := p[8 : 8+n]
	if crc32.Checksum(payload, castagnoli) != sum {
		return nil, 0, errTorn
	}
	r := &recordReader{p: payload}
	b := &batch{}
	nu := int(r.u32())
	for i := 0; i < nu && r.err == nil; i++ {
		name := string(r.bytes(int(r.u32())))
		b.updates = append(b.updates, refUpdate{name: name, old: r.hash(), new: r.hash()})
	}
	no := int(r.u32())
	for i := 0; i < no && r.err == nil; i++ {
		o := logObject{id: r.hash()}
		t := r.bytes(1)
		if r.err != nil {
			break
		}
		o.typ = objType(t[0])
		o.base = r.hash()
		if o.base == zeroHash {
			o.data = r.bytes(int(r.u32()))
		} else {
			nops := int(r.u32())
			for j := 0; j < nops && r.err == nil; j++ {
				kind := r.bytes(1)
				if r.err != nil {
					break
				}
				if kind[0] == 1 {
					o.ed.Ops = append(o.ed.Ops, delta.Op{Data: r.bytes(int(r.u32()))})
				} else {
					o.ed.Ops = append(o.ed.Ops, delta.Op{Off: int(r.u32()), N: int(r.u32())})
				}
			}
		}
		b.objects = append(b.objects, o)
	}
	if r.err != nil {
		return nil, 0, fmt.Errorf("log record with a valid checksum does not decode: %w", r.err)
	}
	return b, 8 + n, nil
}

// findRecord returns the offset of the first intact record in p at or after
// from, or -1. It tries every offset, since a damaged length field gives no
// hint where the next record starts; a false match needs a CRC-32C and a
// full decode to agree by chance.
func findRecord(p []byte, from int) int {
	for i := from; i+8 <= len(p); i++ {
		n := int(binary.BigEndian.Uint32(p[i:]))
		if n == 0 || n > len(p)-i-8 {
			continue
		}
		if _, _, err := decodeRecord(p[i:]); err == nil {
			return i
		}
	}
	return -1
}
