package sessionindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
)

// Stamp identifies, cheaply, one state of the repository's session refs:
// the caller makes it from the identity, size and time of the packed refs
// and from the refs laid over them, without reading every ref.
type Stamp [20]byte

// The listing: every session of one state of the refs (its Stamp), in
// the order a listing shows them (most recently updated first, then by
// id), so that a page is read with two small reads and no check of every
// session's refs against the segments.
//
//	magic     "TBLST01\n"
//	stamp     20 bytes
//	count     uint64
//	offsets   count+1 × uint64: where each record starts, then the end
//	head sum  CRC-32C of everything above
//	records   id, summary (strings as in segments), CRC-32C of the two
//
// It is written whole (temporary name, rename) by a call that had checked
// every session, and used only while the caller's stamp equals its own.
// Like the segments it is derived data: damaged, it is deleted.
var listingMagic = []byte("TBLST01\n")

const listingName = "listing"

const listingHead = 8 + 20 + 8

// WriteListing records the sessions at order (indexes of current
// sessions, in listing order) as the listing for stamp. Every one must
// have a record (Missing(false) empty).
func (v *View) WriteListing(stamp Stamp, order []int) error {
	recs := make([]byte, 0, len(order)*64)
	offs := make([]uint64, 0, len(order)+1)
	for _, ci := range order {
		b := v.best[ci]
		if b.seg < 0 {
			return errors.New("sessionindex: listing a session without a record")
		}
		d := &v.segs[b.seg].docs[b.doc]
		offs = append(offs, uint64(len(recs)))
		start := len(recs)
		recs = appendString(recs, v.cur[ci].ID)
		recs = binary.AppendUvarint(recs, uint64(len(d.sum)))
		recs = append(recs, d.sum...)
		recs = binary.LittleEndian.AppendUint32(recs, crc32.Checksum(recs[start:], castagnoli))
	}
	offs = append(offs, uint64(len(recs)))
	head := append([]byte{}, listingMagic...)
	head = append(head, stamp[:]...)
	head = binary.LittleEndian.AppendUint64(head, uint64(len(order)))
	for _, o := range offs {
		head = binary.LittleEndian.AppendUint64(head, o)
	}
	head = binary.LittleEndian.AppendUint32(head, crc32.Checksum(head, castagnoli))
	return v.x.replace(listingName, append(head, recs...))
}

// replace puts data in the file name: written under a temporary name and
// renamed, so a reader meets the old file or the new one whole. Not
// synced: derived data. An index in memory keeps no listing: its caller
// has no stamp to check one against, and lists its refs at memory speed.
func (x *Index) replace(name string, data []byte) error {
	if x.mem != nil {
		return nil
	}
	if err := os.MkdirAll(x.dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(x.dir, name+"-*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(x.dir, name))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// ListedSession is one session of a page read from the listing.
type ListedSession struct {
	ID      string
	Summary Summary
}

// ReadListing returns the sessions at [offset, offset+limit) of the
// listing, and how many it holds, if the listing was written for stamp;
// ok is false when there is none for it (then the caller checks every
// session, and may write one). It reads the header, the page's offsets
// and the page's records, nothing else.
func (x *Index) ReadListing(stamp Stamp, offset, limit int) (page []ListedSession, total int, ok bool) {
	if x.mem != nil {
		return nil, 0, false
	}
	path := filepath.Join(x.dir, listingName)
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false
	}
	defer f.Close()
	page, total, err = readListing(f, stamp, offset, limit)
	if errors.Is(err, errDamaged) {
		os.Remove(path)
	}
	return page, total, err == nil
}

var errStale = errors.New("listing written for other refs")

func readListing(f *os.File, stamp Stamp, offset, limit int) ([]ListedSession, int, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	size := fi.Size()
	head := make([]byte, listingHead)
	if _, err := f.ReadAt(head, 0); err != nil || !bytes.Equal(head[:8], listingMagic) {
		return nil, 0, errDamaged
	}
	if !bytes.Equal(head[8:28], stamp[:]) {
		return nil, 0, errStale
	}
	n := binary.LittleEndian.Uint64(head[28:])
	if n > uint64(size)/8 {
		return nil, 0, errDamaged
	}
	// The offsets are checked whole (8 bytes a session) so that the
	// checksum covers them; the records are checked one by one.
	offs := make([]byte, 8*(n+1)+4)
	if _, err := f.ReadAt(offs, listingHead); err != nil {
		return nil, 0, errDamaged
	}
	sum := crc32.Update(crc32.Checksum(head, castagnoli), castagnoli, offs[:len(offs)-4])
	if sum != binary.LittleEndian.Uint32(offs[len(offs)-4:]) {
		return nil, 0, errDamaged
	}
	recsOff := int64(listingHead) + int64(len(offs))
	off := func(i uint64) uint64 { return binary.LittleEndian.Uint64(offs[8*i:]) }
	if recsOff+int64(off(n)) != size {
		return nil, 0, errDamaged
	}
	total := int(min(n, math.MaxInt))
	lo := uint64(min(offset, total))
	hi := uint64(min(total-int(lo), limit)) + lo
	if lo == hi {
		return []ListedSession{}, total, nil
	}
	if off(lo) > off(hi) {
		return nil, 0, errDamaged
	}
	data := make([]byte, off(hi)-off(lo))
	if _, err := f.ReadAt(data, recsOff+int64(off(lo))); err != nil {
		return nil, 0, errDamaged
	}
	out := make([]ListedSession, 0, hi-lo)
	for i := lo; i < hi; i++ {
		a, b := off(i)-off(lo), off(i+1)-off(lo)
		if a+4 > b || b > uint64(len(data)) {
			return nil, 0, errDamaged
		}
		rec := data[a : b-4]
		if crc32.Checksum(rec, castagnoli) != binary.LittleEndian.Uint32(data[b-4:b]) {
			return nil, 0, errDamaged
		}
		r := reader{b: rec}
		id := r.string()
		sb := r.bytes()
		if r.bad || len(r.b) != 0 {
			return nil, 0, errDamaged
		}
		s, err := decodeSummary(sb)
		if err != nil {
			return nil, 0, errDamaged
		}
		out = append(out, ListedSession{ID: id, Summary: s})
	}
	return out, total, nil
}

// DropListing deletes the listing (for tests, and for a caller that
// knows it wrong).
func (x *Index) DropListing() error {
	if x.mem != nil {
		return nil
	}
	err := os.Remove(filepath.Join(x.dir, listingName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
