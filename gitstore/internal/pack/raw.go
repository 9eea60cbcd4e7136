package pack

import (
	"errors"
	"fmt"
	"hash/crc32"
	"sort"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// ErrCRC marks an entry whose stored bytes do not match the CRC-32 its
// pack's index holds for it: the entry was damaged after it was written.
var ErrCRC = errors.New("its stored bytes do not match the CRC-32 in the pack index")

// RawEntry is one pack entry as stored, not resolved against its delta
// base. Verify reads entries this way so that each version of a large
// object costs its delta, not its full size.
type RawEntry struct {
	// Pack and Off say where the entry is; together they name it, as an
	// OFS delta names its base.
	Pack *Entry
	Off  int64
	// Type is the object's type for a whole entry, 0 for a delta.
	Type object.Type
	// BaseOff is an OFS delta's base offset in the same pack, -1
	// otherwise; RefBase is a REF delta's base id (RefDelta set).
	BaseOff  int64
	RefBase  object.Hash
	RefDelta bool
	// Data is the inflated payload: the object, or the delta.
	Data []byte
}

// ReadRaw finds id in the packs and returns its entry unresolved, after
// checking the entry's bytes (header and compressed payload, exactly the
// span the index's CRC-32 covers) against the CRC-32 the index holds for
// id. object.ErrNotFound when no pack has it; an error wrapping ErrCRC when
// the bytes were damaged; another error when the entry does not parse or
// inflate.
func (ps *Set) ReadRaw(id object.Hash) (RawEntry, error) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	for _, pe := range ps.order {
		if err := pe.loadIdx(); err != nil {
			return RawEntry{}, err
		}
		off, err := findOffset(pe.idx, id)
		if err != nil {
			continue
		}
		crc, err := pe.idx.FindCRC32(id)
		if err != nil {
			return RawEntry{}, fmt.Errorf("object %s in %s: no CRC-32 in the index: %w", id, pe.name, err)
		}
		re, err := readRawAt(pe, off, crc)
		if err != nil {
			return RawEntry{}, fmt.Errorf("object %s in %s at %d: %w", id, pe.name, off, err)
		}
		return re, nil
	}
	return RawEntry{}, object.ErrNotFound
}

// readRawAt reads the entry at off and checks it against crc.
func readRawAt(pe *Entry, off int64, crc uint32) (RawEntry, error) {
	i := sort.Search(len(pe.offs), func(i int) bool { return pe.offs[i] > off })
	end := pe.size - 20
	if i < len(pe.offs) {
		end = pe.offs[i]
	}
	if end <= off || off < 12 {
		return RawEntry{}, fmt.Errorf("bad entry offset %d", off)
	}
	raw := make([]byte, end-off)
	if _, err := pe.f.ReadAt(raw, off); err != nil {
		return RawEntry{}, err
	}
	if crc32.ChecksumIEEE(raw) != crc {
		return RawEntry{}, ErrCRC
	}
	re := RawEntry{Pack: pe, Off: off, BaseOff: -1}
	p := 0
	c := raw[p]
	p++
	typ := int(c>>4) & 7
	size := int(c & 0x0f)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if p >= len(raw) || shift > 56 {
			return RawEntry{}, fmt.Errorf("truncated entry header")
		}
		c = raw[p]
		p++
		size |= int(c&0x7f) << shift
	}
	switch typ {
	case ofsDeltaType:
		if p >= len(raw) {
			return RawEntry{}, fmt.Errorf("truncated delta offset")
		}
		c = raw[p]
		p++
		dist := int64(c & 0x7f)
		for c&0x80 != 0 {
			if p >= len(raw) || dist > 1<<48 {
				return RawEntry{}, fmt.Errorf("truncated delta offset")
			}
			c = raw[p]
			p++
			dist = ((dist + 1) << 7) | int64(c&0x7f)
		}
		if dist <= 0 || dist > off {
			return RawEntry{}, fmt.Errorf("delta base offset out of range")
		}
		re.BaseOff = off - dist
	case 7:
		if p+20 > len(raw) {
			return RawEntry{}, fmt.Errorf("truncated delta base id")
		}
		copy(re.RefBase[:], raw[p:p+20])
		p += 20
		re.RefDelta = true
	case 1, 2, 3, 4:
		re.Type = object.Type(typ)
	default:
		return RawEntry{}, fmt.Errorf("unknown entry type %d", typ)
	}
	data, stored := StoredPayload(raw[p:], size)
	if !stored {
		var err error
		if data, err = inflateRaw(raw[p:], size); err != nil {
			return RawEntry{}, err
		}
	}
	re.Data = data
	return re, nil
}

// inflateRaw is Set.inflate for a caller without a Set.
func inflateRaw(z []byte, size int) ([]byte, error) {
	var ps Set
	return ps.inflate(z, size)
}

// Name is the pack's name: pack-<checksum>, without an extension.
func (e *Entry) Name() string { return e.name }
