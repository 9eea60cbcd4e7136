package pack

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// Index is a pack's .idx file (version 2), looked up where it lies rather
// than decoded: opening one reads its 1 KB fanout table, and a lookup
// bisects the sorted name table and reads one offset. Decoding the index
// whole, as go-git does, costs a ledger of a million thoughts (7.3 million
// objects, a 205 MB .idx) 15 s and several hundred MB on the first object
// read of every process.
//
// The file is memory-mapped where the system allows it (as git does), and
// read with pread otherwise (Windows, or a map that fails). The mapping is
// released when the Index is no longer reachable, never earlier: a merge
// may still be reading a pack that a Refresh has just closed. So no slice
// of the mapping leaves this file's methods, and each method that reads it
// keeps the Index alive until it is done.
//
// Layout (gitformat-pack): magic and version (8 bytes), fanout (256 ×
// 4), names (n × 20), CRC-32s (n × 4), 32-bit offsets (n × 4), 64-bit
// offsets (8 each, for the 32-bit offsets whose top bit is set), the pack's
// checksum and the index's own (20 each).
type Index struct {
	name   string // the file, for errors
	n      int
	size   int64
	fanout [256]uint32
	big    int64 // entries in the 64-bit offset table
	// data is the whole file when it is mapped or built in memory; else
	// f is read with pread.
	data []byte
	f    *os.File

	offsOnce sync.Once
	offs     []int64
	offsErr  error

	sumOnce sync.Once
	sumErr  error
}

// IndexEntry is one object of an index.
type IndexEntry struct {
	ID     object.Hash
	Offset int64
	CRC32  uint32
}

const (
	idxNamesAt  = 8 + 256*4 // the name table follows the header and fanout
	idxTrailer  = 2 * 20
	idxMinSize  = idxNamesAt + idxTrailer
	idxPerEntry = 20 + 4 + 4
)

var idxMagic = []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}

// errIndexClosed is what a pread of an index whose file was closed gives.
var errIndexClosed = errors.New("pack index is closed")

// noMap, set by tests, makes openIndex read with pread as it does where
// files cannot be mapped.
var noMap bool

// openIndex opens the index in f, which it takes over: f is closed by
// openIndex when the file is mapped or the index is refused, and by close
// otherwise.
func openIndex(f *os.File) (*Index, error) {
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	x := &Index{name: f.Name(), size: fi.Size(), f: f}
	if err := x.readHead(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", x.name, err)
	}
	if noMap {
		return x, nil
	}
	if data, err := mapFile(f, x.size); err == nil {
		x.data, x.f = data, nil
		f.Close()
		runtime.AddCleanup(x, unmapFile, data)
	}
	return x, nil
}

// indexFromBytes is an index held in memory (tests check crafted ones).
func indexFromBytes(name string, b []byte) (*Index, error) {
	x := &Index{name: name, size: int64(len(b)), data: b}
	if err := x.readHead(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return x, nil
}

// readHead reads and checks the header and the fanout table, and checks
// the file's size against the object count the way git's load_idx does,
// so that every later read of a table lies inside the file.
func (x *Index) readHead() error {
	if x.size < idxMinSize {
		return fmt.Errorf("malformed pack index: %d bytes, too short for an index", x.size)
	}
	var head [idxNamesAt]byte
	if err := x.read(head[:], 0); err != nil {
		return err
	}
	if !bytes.Equal(head[:4], idxMagic[:4]) {
		return errors.New("malformed pack index: not an index (bad magic)")
	}
	if !bytes.Equal(head[4:8], idxMagic[4:]) {
		return fmt.Errorf("unsupported pack index version %d (want 2)", binary.BigEndian.Uint32(head[4:8]))
	}
	for i := range x.fanout {
		x.fanout[i] = binary.BigEndian.Uint32(head[8+4*i:])
		if i > 0 && x.fanout[i] < x.fanout[i-1] {
			return fmt.Errorf("malformed pack index: fanout entry %d is below the one before", i)
		}
	}
	n := int64(x.fanout[255])
	min := idxMinSize + n*idxPerEntry // at most 2^32 × 28: no overflow
	extra := x.size - min
	if extra < 0 || extra%8 != 0 || (n == 0 && extra != 0) || (n > 0 && extra > (n-1)*8) {
		return fmt.Errorf("malformed pack index: %d bytes do not fit its %d objects", x.size, n)
	}
	if int64(int(n)) != n {
		return fmt.Errorf("pack index of %d objects is too large for this platform", n)
	}
	x.n, x.big = int(n), extra/8
	return nil
}

// read fills p from the index at off.
func (x *Index) read(p []byte, off int64) error {
	if off < 0 || off > x.size-int64(len(p)) {
		return fmt.Errorf("%s: read past the end of the index", x.name)
	}
	if x.data != nil {
		copy(p, x.data[off:])
		runtime.KeepAlive(x)
		return nil
	}
	if x.f == nil {
		return errIndexClosed
	}
	if _, err := x.f.ReadAt(p, off); err != nil {
		if errors.Is(err, os.ErrClosed) {
			return errIndexClosed
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("%s: %w", x.name, err)
	}
	return nil
}

// close closes the file of an index read with pread; a mapped index is
// unmapped once unreachable.
func (x *Index) close() {
	if x.f != nil {
		x.f.Close()
	}
}

// Count is the number of objects in the index.
func (x *Index) Count() int { return x.n }

// find returns the position of id in the name table.
func (x *Index) find(id object.Hash) (int, bool, error) {
	lo, hi := 0, int(x.fanout[id[0]])
	if id[0] > 0 {
		lo = int(x.fanout[id[0]-1])
	}
	if x.data != nil {
		names := x.data[idxNamesAt : idxNamesAt+20*x.n]
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			switch bytes.Compare(names[20*m:20*m+20], id[:]) {
			case 0:
				runtime.KeepAlive(x)
				return m, true, nil
			case -1:
				lo = m + 1
			default:
				hi = m
			}
		}
		runtime.KeepAlive(x)
		return 0, false, nil
	}
	var name [20]byte
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if err := x.read(name[:], idxNamesAt+20*int64(m)); err != nil {
			return 0, false, err
		}
		switch bytes.Compare(name[:], id[:]) {
		case 0:
			return m, true, nil
		case -1:
			lo = m + 1
		default:
			hi = m
		}
	}
	return 0, false, nil
}

// offsetAt is the pack offset of the object at position i.
func (x *Index) offsetAt(i int) (int64, error) {
	var b [8]byte
	if err := x.read(b[:4], idxNamesAt+int64(x.n)*24+4*int64(i)); err != nil {
		return 0, err
	}
	return x.resolve(binary.BigEndian.Uint32(b[:4]))
}

// resolve turns a 32-bit offset entry into the offset, through the 64-bit
// table when its top bit says so.
func (x *Index) resolve(o uint32) (int64, error) {
	if o&0x80000000 == 0 {
		return int64(o), nil
	}
	j := int64(o & 0x7fffffff)
	if j >= x.big {
		return 0, fmt.Errorf("%s: 64-bit offset %d out of range (the table has %d)", x.name, j, x.big)
	}
	var b [8]byte
	if err := x.read(b[:], idxNamesAt+int64(x.n)*idxPerEntry+8*j); err != nil {
		return 0, err
	}
	off := int64(binary.BigEndian.Uint64(b[:]))
	if off < 0 {
		return 0, fmt.Errorf("%s: 64-bit offset %d out of range", x.name, uint64(off))
	}
	return off, nil
}

// crcAt is the CRC-32 of the entry at position i.
func (x *Index) crcAt(i int) (uint32, error) {
	var b [4]byte
	if err := x.read(b[:], idxNamesAt+int64(x.n)*20+4*int64(i)); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b[:]), nil
}

// Find returns the pack offset of id, or object.ErrNotFound.
func (x *Index) Find(id object.Hash) (int64, error) {
	i, ok, err := x.find(id)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, object.ErrNotFound
	}
	return x.offsetAt(i)
}

// Entry returns the i-th object of the index, in id order.
func (x *Index) Entry(i int) (IndexEntry, error) {
	if i < 0 || i >= x.n {
		return IndexEntry{}, fmt.Errorf("%s: entry %d of %d", x.name, i, x.n)
	}
	var e IndexEntry
	if err := x.read(e.ID[:], idxNamesAt+20*int64(i)); err != nil {
		return e, err
	}
	var err error
	if e.Offset, err = x.offsetAt(i); err != nil {
		return e, err
	}
	e.CRC32, err = x.crcAt(i)
	return e, err
}

// sortedOffsets returns every entry's offset, sorted — where each entry
// ends is where the next begins — computed the first time it is asked
// for: it reads the whole 32-bit offset table (4 bytes an object) and
// sorts n offsets (8 bytes each). Lookups do not need it; exact entry
// bounds do (a CRC-32 check, a received pack's read-back).
func (x *Index) sortedOffsets() ([]int64, error) {
	x.offsOnce.Do(func() {
		offs := make([]int64, x.n)
		const chunk = 16 << 10
		buf := make([]byte, 4*min(x.n, chunk))
		for i := 0; i < x.n; i += chunk {
			b := buf[:4*min(chunk, x.n-i)]
			if err := x.read(b, idxNamesAt+int64(x.n)*24+4*int64(i)); err != nil {
				x.offsErr = err
				return
			}
			for j := range len(b) / 4 {
				o, err := x.resolve(binary.BigEndian.Uint32(b[4*j:]))
				if err != nil {
					x.offsErr = err
					return
				}
				offs[i+j] = o
			}
		}
		slices.Sort(offs)
		x.offs = offs
	})
	return x.offs, x.offsErr
}

// checkSum compares the index's trailing checksum with its contents, once.
// Lookups do not (neither do git's); verify and merges do, which read
// every entry anyway.
func (x *Index) checkSum() error {
	x.sumOnce.Do(func() {
		h := sha1.New()
		if x.data != nil {
			h.Write(x.data[:x.size-20])
			runtime.KeepAlive(x)
		} else {
			if x.f == nil {
				x.sumErr = errIndexClosed
				return
			}
			if _, err := io.Copy(h, io.NewSectionReader(x.f, 0, x.size-20)); err != nil {
				x.sumErr = fmt.Errorf("%s: %w", x.name, err)
				return
			}
		}
		var want [20]byte
		if err := x.read(want[:], x.size-20); err != nil {
			x.sumErr = err
			return
		}
		if !bytes.Equal(h.Sum(nil), want[:]) {
			x.sumErr = fmt.Errorf("%s: the pack index is damaged: its checksum does not match its contents", x.name)
		}
	})
	return x.sumErr
}
