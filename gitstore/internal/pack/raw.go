package pack

import (
	"errors"
	"fmt"
	"hash/crc32"

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
		i, ok, err := pe.idx.find(id)
		if err != nil {
			return RawEntry{}, err
		}
		if !ok {
			continue
		}
		off, err := pe.idx.offsetAt(i)
		if err != nil {
			return RawEntry{}, fmt.Errorf("object %s in %s: %w", id, pe.name, err)
		}
		crc, err := pe.idx.crcAt(i)
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
	end, err := pe.entryEnd(off)
	if err != nil {
		return RawEntry{}, err
	}
	raw := make([]byte, end-off)
	if _, err := pe.f.ReadAt(raw, off); err != nil {
		return RawEntry{}, err
	}
	if crc32.ChecksumIEEE(raw) != crc {
		return RawEntry{}, ErrCRC
	}
	h, err := parseEntryHeader(raw, off)
	if err != nil {
		return RawEntry{}, err
	}
	re := RawEntry{Pack: pe, Off: off, BaseOff: h.baseOff, RefBase: h.refBase, RefDelta: h.typ == refDeltaType}
	if h.typ != ofsDeltaType && h.typ != refDeltaType {
		re.Type = object.Type(h.typ)
	}
	p, size := h.n, h.size
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

// entryHead is what the header of a pack entry says.
type entryHead struct {
	typ     int // 1-4 a whole object, ofsDeltaType or refDeltaType
	size    int // the inflated payload's size
	baseOff int64
	refBase object.Hash
	n       int // the header's length: the compressed payload follows
}

// parseEntryHeader parses the header of the entry at off, whose bytes (up
// to the next entry) are raw. Every length is checked against raw and
// every offset against the pack, since a damaged or hostile pack (a
// received one is read back with this) must give an error, not a panic.
func parseEntryHeader(raw []byte, off int64) (entryHead, error) {
	return parseEntryHead(raw, off, int64(len(raw)))
}

// parseEntryHead is parseEntryHeader for raw, the first bytes of an entry
// that has at most room bytes.
func parseEntryHead(raw []byte, off, room int64) (entryHead, error) {
	h := entryHead{baseOff: -1}
	if len(raw) == 0 {
		return h, fmt.Errorf("empty entry")
	}
	p := 0
	c := raw[p]
	p++
	h.typ = int(c>>4) & 7
	h.size = int(c & 0x0f)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if p >= len(raw) || shift > 56 {
			return h, fmt.Errorf("truncated entry header")
		}
		c = raw[p]
		p++
		h.size |= int(c&0x7f) << shift
	}
	if h.size < 0 {
		return h, fmt.Errorf("entry size out of range")
	}
	switch h.typ {
	case ofsDeltaType:
		if p >= len(raw) {
			return h, fmt.Errorf("truncated delta offset")
		}
		c = raw[p]
		p++
		dist := int64(c & 0x7f)
		for c&0x80 != 0 {
			if p >= len(raw) || dist > 1<<48 {
				return h, fmt.Errorf("truncated delta offset")
			}
			c = raw[p]
			p++
			dist = ((dist + 1) << 7) | int64(c&0x7f)
		}
		if dist <= 0 || dist > off {
			return h, fmt.Errorf("delta base offset out of range")
		}
		h.baseOff = off - dist
	case refDeltaType:
		if p+20 > len(raw) {
			return h, fmt.Errorf("truncated delta base id")
		}
		copy(h.refBase[:], raw[p:p+20])
		p += 20
	case 1, 2, 3, 4:
	default:
		return h, fmt.Errorf("unknown entry type %d", h.typ)
	}
	// Deflate expands at most 1032 to 1, so a size beyond that is a
	// damaged header, refused before a buffer of that size is allocated.
	if int64(h.size-64)/1032 > room-int64(p) {
		return h, fmt.Errorf("entry size %d out of range for %d stored bytes", h.size, room-int64(p))
	}
	h.n = p
	return h, nil
}

// inflateRaw is Set.inflate for a caller without a Set.
func inflateRaw(z []byte, size int) ([]byte, error) {
	var ps Set
	return ps.inflate(z, size)
}

// Name is the pack's name: pack-<checksum>, without an extension.
func (e *Entry) Name() string { return e.name }
