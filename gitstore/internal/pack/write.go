// Package pack writes, reads and merges Git pack files.
//
//   - Plan lays out a flush's logged objects as pack entries (newest version
//     whole, older ones deltas of their successors), and Write writes them
//     with their index, synced and renamed into place, the index last.
//   - Set reads objects from the packs of a directory with one pread per
//     entry, resolving OFS deltas through a small cache of bases.
//   - Merge merges packs geometrically, copying entries as they are and
//     using the links a flush recorded to turn an older whole version into
//     a delta of its successor.
//   - Stream writes the pack a push sends; Install stores a received one,
//     indexed in one sequential pass by the package's own indexer.
//
// Locks: a Set's mu guards its list of packs and their open files (readers
// share it for a whole read; Refresh and Close take it alone); cacheMu
// guards the base cache and is taken inside mu, never the other way. Who
// may write or merge packs in a directory is the caller's business (the
// store's flush lock).
package pack

import (
	"bufio"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// Object is one object to write into a pack. When base >= 0 the object
// is written as an OFS_DELTA of the entry at that index, which must come
// earlier in the list.
type Object struct {
	ID    object.Hash
	Type  object.Type
	Data  []byte // the whole object, for full entries
	Base  int    // the index in the same list of a delta's base; -1 for none
	Delta []byte // the Git delta, for delta entries
}

// The pack entry types of deltas (1 to 4 are the object types).
const (
	ofsDeltaType = 6
	refDeltaType = 7
)

// countingWriter tracks the offset and checksum of everything written.
type countingWriter struct {
	w   io.Writer
	sum interface {
		io.Writer
		Sum([]byte) []byte
	}
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.sum.Write(p[:n])
	c.n += int64(n)
	return n, err
}

// Write writes objs as a pack and its index into packDir, durably, and
// returns the pack's name. The pack becomes visible to Git readers only when
// its .idx is renamed into place, after both files are on disk.
func Write(packDir string, objs []Object) (object.Hash, error) {
	tmp, err := os.CreateTemp(packDir, "tmp_pack_")
	if err != nil {
		return object.ZeroHash, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()

	pb := getPackBuffers(tmp)
	defer putPackBuffers(pb)
	bw := pb.bw
	cw := &countingWriter{w: bw, sum: sha1.New()}
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(objs)))
	if _, err := cw.Write(hdr[:]); err != nil {
		return object.ZeroHash, err
	}

	idx := make([]indexed, 0, len(objs))
	offsets := make([]int64, len(objs))
	// Small entries (commits, thought files, deltas) gain little from
	// compression and cost the most per byte to compress, so they are stored.
	ew := &crcWriter{w: cw}
	for i, o := range objs {
		offsets[i] = cw.n
		ew.crc = 0
		payload := o.Data
		var head []byte
		if o.Base >= 0 {
			if o.Base >= i {
				return object.ZeroHash, fmt.Errorf("pack entry %d: delta base %d does not precede it", i, o.Base)
			}
			payload = o.Delta
			head = entryHeader(ofsDeltaType, len(payload))
			head = appendOfsOffset(head, offsets[i]-offsets[o.Base])
		} else {
			head = entryHeader(int(o.Type), len(payload))
		}
		if _, err := ew.Write(head); err != nil {
			return object.ZeroHash, err
		}
		if len(payload) < 2048 {
			if err := WriteStored(ew, payload, &pb.scratch); err != nil {
				return object.ZeroHash, err
			}
		} else {
			fast := pb.compressor(ew)
			if _, err := fast.Write(payload); err != nil {
				return object.ZeroHash, err
			}
			if err := fast.Close(); err != nil {
				return object.ZeroHash, err
			}
		}
		idx = append(idx, indexed{off: uint64(offsets[i]), id: o.ID, crc: ew.crc})
	}
	return finishPack(packDir, tmp, bw, cw, idx)
}

// finishPack writes the pack's trailer and its index, syncs both, and
// renames them into place: the .idx last, as its presence is what makes
// git read the pack.
func finishPack(packDir string, tmp *os.File, bw *bufio.Writer, cw *countingWriter, idx []indexed) (object.Hash, error) {
	var packSum object.Hash
	copy(packSum[:], cw.sum.Sum(nil))
	if _, err := bw.Write(packSum[:]); err != nil {
		return object.ZeroHash, err
	}
	if err := bw.Flush(); err != nil {
		return object.ZeroHash, err
	}
	if err := tmp.Sync(); err != nil {
		return object.ZeroHash, err
	}
	// The package's own index writer (as for a received pack): go-git's
	// built the index in memory object by object first, about a fifth of
	// what a flush allocated once planning was cheap.
	sortByID(idx)
	for i := 1; i < len(idx); i++ {
		if idx[i].id == idx[i-1].id {
			return object.ZeroHash, fmt.Errorf("pack: object %s twice", idx[i].id)
		}
	}
	itmp, err := os.CreateTemp(packDir, "tmp_idx_")
	if err != nil {
		return object.ZeroHash, err
	}
	defer os.Remove(itmp.Name())
	defer itmp.Close()
	if err := writeIndexV2(itmp, idx, packSum, 1<<31-1); err != nil {
		return object.ZeroHash, err
	}
	if err := itmp.Sync(); err != nil {
		return object.ZeroHash, err
	}
	base := filepath.Join(packDir, "pack-"+packSum.String())
	// Git's modes for packs: read-only.
	_ = tmp.Chmod(0o444)
	_ = itmp.Chmod(0o444)
	if err := durable.Rename(tmp.Name(), base+".pack"); err != nil {
		return object.ZeroHash, err
	}
	if err := durable.Rename(itmp.Name(), base+".idx"); err != nil {
		return object.ZeroHash, err
	}
	return packSum, durable.SyncDir(packDir)
}

// packBuffers are what writing a pack needs besides the objects: a file
// buffer, a reader for merges and a compressor. A flush or merge takes a
// set and gives it back. The buffers are kept in a free list rather than
// a sync.Pool, which every garbage collection empties (and a busy server
// collects several times a second). The compressor, a megabyte and a half
// of state, is kept with them while packs keep coming: making it anew for
// each flush (allocating, clearing and faulting in that memory) cost a
// busy server's flusher about as much as compressing the pack did. The
// flusher drops it on a tick with nothing to flush (ReleaseIdle), so that
// an idle server does not hold it.
type packBuffers struct {
	br      *bufio.Reader // merges read their source packs with it
	bw      *bufio.Writer
	fast    *zlib.Writer // zlib.BestSpeed, made on first use
	scratch []byte       // for WriteStored
}

// packBufferSize is the file buffer: large enough that writes are few.
const packBufferSize = 128 << 10

var freePackBuffers struct {
	sync.Mutex
	free []*packBuffers
}

func getPackBuffers(w io.Writer) *packBuffers {
	freePackBuffers.Lock()
	var pb *packBuffers
	if n := len(freePackBuffers.free); n > 0 {
		pb = freePackBuffers.free[n-1]
		freePackBuffers.free = freePackBuffers.free[:n-1]
	}
	freePackBuffers.Unlock()
	if pb == nil {
		pb = &packBuffers{bw: bufio.NewWriterSize(w, packBufferSize)}
	}
	pb.bw.Reset(w)
	return pb
}

// compressor returns the set's BestSpeed compressor, writing to w.
func (pb *packBuffers) compressor(w io.Writer) *zlib.Writer {
	if pb.fast == nil {
		pb.fast, _ = zlib.NewWriterLevel(w, zlib.BestSpeed)
	}
	pb.fast.Reset(w)
	return pb.fast
}

func (pb *packBuffers) reader() *bufio.Reader {
	if pb.br == nil {
		pb.br = bufio.NewReaderSize(nil, packBufferSize)
	}
	return pb.br
}

// putPackBuffers returns a set. One is kept: a process flushes one
// repository at a time but for rare moments.
func putPackBuffers(pb *packBuffers) {
	pb.bw.Reset(io.Discard)
	if pb.br != nil {
		pb.br.Reset(nil)
	}
	if pb.fast != nil {
		pb.fast.Reset(io.Discard) // let go of the pack's writer
	}
	if cap(pb.scratch) > 64<<10 {
		pb.scratch = nil
	}
	freePackBuffers.Lock()
	if len(freePackBuffers.free) < 1 {
		freePackBuffers.free = append(freePackBuffers.free, pb)
	}
	freePackBuffers.Unlock()
}

// ReleaseIdle drops the compressor kept between packs (see packBuffers).
func ReleaseIdle() {
	freePackBuffers.Lock()
	for _, pb := range freePackBuffers.free {
		pb.fast = nil
	}
	freePackBuffers.Unlock()
}

// WriteStored writes p as a zlib stream of stored (uncompressed) deflate
// blocks, as zlib.NoCompression would, without a compressor's state.
func WriteStored(w io.Writer, p []byte, scratch *[]byte) error {
	sum := adler32.Checksum(p)
	b := append((*scratch)[:0], 0x78, 0x01) // zlib header: deflate, 32K window, fastest
	for first := true; first || len(p) > 0; first = false {
		n := min(len(p), 0xffff)
		final := byte(0)
		if n == len(p) {
			final = 1
		}
		b = append(b, final, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		b = append(b, p[:n]...)
		p = p[n:]
	}
	b = binary.BigEndian.AppendUint32(b, sum)
	*scratch = b
	_, err := w.Write(b)
	return err
}

// crcWriter passes writes on to w and keeps their CRC-32 (IEEE), as the
// pack index records for every entry.
type crcWriter struct {
	w   io.Writer
	crc uint32
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc = crc32.Update(c.crc, crc32.IEEETable, p[:n])
	return n, err
}

// entryHeader encodes a pack entry's type and inflated size.
func entryHeader(typ, size int) []byte { return appendEntryHeader(nil, typ, size) }

// appendEntryHeader appends a pack entry's header to b.
func appendEntryHeader(b []byte, typ, size int) []byte {
	b = append(b, byte(typ<<4)|byte(size&0x0f))
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
		size >>= 7
	}
	return b
}

// appendOfsOffset encodes the distance back to an OFS_DELTA base in Git's
// offset encoding (big-endian base-128 with an added one per extra byte).
func appendOfsOffset(b []byte, off int64) []byte {
	var tmp [10]byte
	i := len(tmp) - 1
	tmp[i] = byte(off & 0x7f)
	for off >>= 7; off > 0; off >>= 7 {
		off--
		i--
		tmp[i] = 0x80 | byte(off&0x7f)
	}
	return append(b, tmp[i:]...)
}

// durable.SyncDir makes a directory's entries (renames, new files) durable.
