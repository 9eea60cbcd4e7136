package gitstore

import (
	"bufio"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// packObject is one object to write into a pack. When base >= 0 the object
// is written as an OFS_DELTA of the entry at that index, which must come
// earlier in the list.
type packObject struct {
	id    hash
	typ   objType
	data  []byte // the whole object, for full entries
	base  int
	delta []byte // the Git delta, for delta entries
}

const ofsDeltaType = 6

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

// writePack writes objs as a pack and its index into packDir, durably, and
// returns the pack's name. The pack becomes visible to Git readers only when
// its .idx is renamed into place, after both files are on disk.
func writePack(packDir string, objs []packObject) (hash, error) {
	tmp, err := os.CreateTemp(packDir, "tmp_pack_")
	if err != nil {
		return zeroHash, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()

	bw := bufio.NewWriterSize(tmp, 1<<20)
	cw := &countingWriter{w: bw, sum: sha1.New()}
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(objs)))
	if _, err := cw.Write(hdr[:]); err != nil {
		return zeroHash, err
	}

	idx := new(idxfile.Writer)
	if err := idx.OnHeader(uint32(len(objs))); err != nil {
		return zeroHash, err
	}
	offsets := make([]int64, len(objs))
	// Small entries (commits, thought files, deltas) gain little from
	// compression and cost the most per byte to compress, so they are stored.
	fast, stored := zlibWriter(zlib.BestSpeed), zlibWriter(zlib.NoCompression)
	defer zlibWriters[zlib.BestSpeed].Put(fast)
	defer zlibWriters[zlib.NoCompression].Put(stored)
	for i, o := range objs {
		offsets[i] = cw.n
		crc := crc32.NewIEEE()
		ew := io.MultiWriter(cw, crc)
		payload := o.data
		var head []byte
		if o.base >= 0 {
			if o.base >= i {
				return zeroHash, fmt.Errorf("pack entry %d: delta base %d does not precede it", i, o.base)
			}
			payload = o.delta
			head = entryHeader(ofsDeltaType, len(payload))
			head = appendOfsOffset(head, offsets[i]-offsets[o.base])
		} else {
			head = entryHeader(int(o.typ), len(payload))
		}
		if _, err := ew.Write(head); err != nil {
			return zeroHash, err
		}
		zw := fast
		if len(payload) < 2048 {
			zw = stored
		}
		zw.Reset(ew)
		if _, err := zw.Write(payload); err != nil {
			return zeroHash, err
		}
		if err := zw.Close(); err != nil {
			return zeroHash, err
		}
		idx.Add(o.id, uint64(offsets[i]), crc.Sum32())
	}
	return finishPack(packDir, tmp, bw, cw, idx)
}

// finishPack writes the pack's trailer and its index, syncs both, and
// renames them into place: the .idx last, as its presence is what makes
// git read the pack.
func finishPack(packDir string, tmp *os.File, bw *bufio.Writer, cw *countingWriter, idx *idxfile.Writer) (hash, error) {
	var packSum hash
	copy(packSum[:], cw.sum.Sum(nil))
	if _, err := bw.Write(packSum[:]); err != nil {
		return zeroHash, err
	}
	if err := bw.Flush(); err != nil {
		return zeroHash, err
	}
	if err := tmp.Sync(); err != nil {
		return zeroHash, err
	}
	if err := idx.OnFooter(packSum); err != nil {
		return zeroHash, err
	}
	mi, err := idx.Index()
	if err != nil {
		return zeroHash, err
	}
	itmp, err := os.CreateTemp(packDir, "tmp_idx_")
	if err != nil {
		return zeroHash, err
	}
	defer os.Remove(itmp.Name())
	defer itmp.Close()
	ibw := bufio.NewWriter(itmp)
	if _, err := idxfile.NewEncoder(ibw).Encode(mi); err != nil {
		return zeroHash, err
	}
	if err := ibw.Flush(); err != nil {
		return zeroHash, err
	}
	if err := itmp.Sync(); err != nil {
		return zeroHash, err
	}
	base := filepath.Join(packDir, "pack-"+packSum.String())
	// Git's modes for packs: read-only.
	_ = tmp.Chmod(0o444)
	_ = itmp.Chmod(0o444)
	if err := os.Rename(tmp.Name(), base+".pack"); err != nil {
		return zeroHash, err
	}
	if err := os.Rename(itmp.Name(), base+".idx"); err != nil {
		return zeroHash, err
	}
	return packSum, syncDir(packDir)
}

// zlibWriters pools compressors by level: each holds hundreds of kilobytes
// of state, and a pack is written every flush.
var zlibWriters = map[int]*sync.Pool{
	zlib.BestSpeed:     {New: func() any { w, _ := zlib.NewWriterLevel(io.Discard, zlib.BestSpeed); return w }},
	zlib.NoCompression: {New: func() any { w, _ := zlib.NewWriterLevel(io.Discard, zlib.NoCompression); return w }},
}

func zlibWriter(level int) *zlib.Writer { return zlibWriters[level].Get().(*zlib.Writer) }

// entryHeader encodes a pack entry's type and inflated size.
func entryHeader(typ, size int) []byte {
	b := []byte{byte(typ<<4) | byte(size&0x0f)}
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

// syncDir makes a directory's entries (renames, new files) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
