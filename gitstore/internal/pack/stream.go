package pack

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// SendDeltaDepth bounds the delta chains of a pack we send: every
// SendDeltaDepth-th version of a path goes whole.
const SendDeltaDepth = 100

// MinDeltaSize is the size below which an object is sent whole: a delta of
// a small thought file saves little.
const MinDeltaSize = 512

// Stream writes a pack to a temporary file as objects are added, so that a
// large push holds only the previous version of each path in memory. The
// object count in the header is known only at the end, so the header is
// patched and the checksum computed then.
type Stream struct {
	f     *os.File
	bw    *bufio.Writer
	off   int64
	Count int // objects added so far
	// sent holds every object added, so that none is sent twice; bases
	// the offsets of those added since NewGroup that may serve as a delta
	// base (MinDeltaSize or more). A push of millions of objects held an
	// offset for each of them, though a walker takes its delta bases only
	// from the group it is walking: a set of ids takes two thirds of the room.
	sent  map[object.Hash]struct{}
	bases map[object.Hash]int64
	zw    *zlib.Writer
}

func NewStream(dir string) (*Stream, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "push-*.pack")
	if err != nil {
		return nil, err
	}
	if err := durable.Lock(context.Background(), f, nil, 0); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	p := &Stream{f: f, bw: bufio.NewWriterSize(f, 1<<20), sent: map[object.Hash]struct{}{}, bases: map[object.Hash]int64{}}
	p.zw, _ = zlib.NewWriterLevel(p.bw, zlib.BestSpeed)
	var hdr [12]byte
	if _, err := p.bw.Write(hdr[:]); err != nil {
		p.Discard()
		return nil, err
	}
	p.off = 12
	return p, nil
}

func (p *Stream) Has(id object.Hash) bool { _, ok := p.sent[id]; return ok }

// NewGroup says that the objects added so far will not be offered as delta
// bases again (a push's walker starts on another session, whose objects
// take their bases from that session), so that their offsets are dropped.
func (p *Stream) NewGroup() {
	if len(p.bases) > 0 {
		p.bases = map[object.Hash]int64{}
	}
}

// add writes one object, as an OFS_DELTA of base when base is set, already
// in this pack, and the delta pays.
func (p *Stream) Add(id object.Hash, typ object.Type, data []byte, base object.Hash, baseData []byte) error {
	if p.sent == nil {
		return errors.New("pack: object added after the pack was finished")
	}
	if p.Has(id) {
		return nil
	}
	start := p.off
	payload := data
	var head []byte
	if boff, ok := p.bases[base]; ok && base != object.ZeroHash && len(data) >= MinDeltaSize {
		d := delta.Diff(baseData, data).GitDelta(len(baseData))
		if len(d) < len(data)/2 {
			payload = d
			head = appendOfsOffset(entryHeader(ofsDeltaType, len(d)), start-boff)
		}
	}
	if head == nil {
		head = entryHeader(int(typ), len(data))
	}
	cw := &countingWriter{w: p.bw, sum: crc32.NewIEEE()}
	if _, err := cw.Write(head); err != nil {
		return err
	}
	p.zw.Reset(cw)
	if _, err := p.zw.Write(payload); err != nil {
		return err
	}
	if err := p.zw.Close(); err != nil {
		return err
	}
	p.off += cw.n
	p.sent[id] = struct{}{}
	if len(data) >= MinDeltaSize {
		p.bases[id] = start
	}
	p.Count++
	return nil
}

// finish completes the pack and returns it open at its start.
func (p *Stream) Finish() (*os.File, int64, error) {
	if err := p.bw.Flush(); err != nil {
		return nil, 0, err
	}
	// The ids served dedup and delta bases while the pack was built; a
	// large push holds millions of them, and sending needs none.
	p.sent, p.bases = nil, nil
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(p.Count))
	if _, err := p.f.WriteAt(hdr[:], 0); err != nil {
		return nil, 0, err
	}
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return nil, 0, err
	}
	h := sha1.New()
	if _, err := io.Copy(h, p.f); err != nil {
		return nil, 0, err
	}
	if _, err := p.f.Write(h.Sum(nil)); err != nil {
		return nil, 0, err
	}
	if _, err := p.f.Seek(0, io.SeekStart); err != nil {
		return nil, 0, err
	}
	return p.f, p.off + 20, nil
}

func (p *Stream) Discard() {
	p.f.Close()
	os.Remove(p.f.Name())
}

// Install writes the pack r to a temporary file in tmpDir, indexes it,
// fsyncs both, and renames them into packDir (the index last, since a pack
// without its index is ignored), then fsyncs packDir: only then may a ref
// point into it. The temporary file is flock'd while it lives, which tells
// CleanTransferDir that its transfer is still running.
func Install(tmpDir, packDir string, r io.Reader) (int, int64, error) {
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return 0, 0, err
	}
	tmp, err := os.CreateTemp(tmpDir, "fetch-*.pack")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if err := durable.Lock(context.Background(), tmp, nil, 0); err != nil {
		return 0, 0, err
	}
	// The pack's checksum is computed as it arrives, which spares the
	// indexer a pass.
	th := &trailHasher{h: sha1.New()}
	n, err := io.CopyBuffer(io.MultiWriter(tmp, th), r, make([]byte, 256<<10))
	if err != nil {
		return 0, n, fmt.Errorf("receive pack: %w", err)
	}
	if n == 0 {
		return 0, 0, nil
	}
	count, err := checkPackHeader(tmp, n)
	if err != nil {
		return 0, n, err
	}
	var sum object.Hash
	copy(sum[:], th.h.Sum(nil))
	if !bytes.Equal(sum[:], th.tail[:]) {
		return 0, n, errors.New("the pack received is damaged: its trailing checksum does not match its contents")
	}
	// Our own indexer (indexer.go) checks every entry's size and hashes
	// every object whole, deltas applied: what it indexes the store can
	// read, so the received pack is not read back.
	entries, err := indexPack(tmp, n, count)
	if err != nil {
		return 0, n, fmt.Errorf("the pack received is damaged: %w", err)
	}
	idxTmp, err := os.CreateTemp(tmpDir, "fetch-*.idx")
	if err != nil {
		return 0, n, err
	}
	defer os.Remove(idxTmp.Name())
	defer idxTmp.Close()
	if err := durable.Lock(context.Background(), idxTmp, nil, 0); err != nil {
		return 0, n, err
	}
	if err := writeIndexV2(idxTmp, entries, sum, 1<<31-1); err != nil {
		return 0, n, err
	}
	// Closed before the renames: Windows does not rename a file that is
	// open (and the flock goes with it; CleanTransferDir leaves files this
	// recent alone anyway).
	for _, f := range []*os.File{tmp, idxTmp} {
		if err := f.Sync(); err != nil {
			return 0, n, err
		}
		if err := f.Close(); err != nil {
			return 0, n, err
		}
	}
	if err := os.MkdirAll(packDir, 0o755); err != nil {
		return 0, n, err
	}
	base := filepath.Join(packDir, "pack-"+sum.String())
	// Before the index appears: a Set that refreshes meanwhile (the
	// flusher's) opens the pack with them.
	rememberKinds(kindsPath(packDir, "pack-"+sum.String()), entries)
	if err := durable.Rename(tmp.Name(), base+".pack"); err != nil {
		return 0, n, err
	}
	if err := durable.Rename(idxTmp.Name(), base+".idx"); err != nil {
		return 0, n, err
	}
	if err := durable.SyncDir(packDir); err != nil {
		return 0, n, err
	}
	return count, n, nil
}

// minPackEntry is the fewest bytes a pack entry can take: a one-byte
// header and the shortest zlib stream (two bytes of header, an empty final
// block in two, the Adler-32 in four).
const minPackEntry = 9

// checkPackHeader returns the object count of a received pack's header,
// refusing a count larger than the pack's size can hold: the indexer
// allocates its table for the claimed count before reading a single
// entry, and sixteen bytes claiming four billion objects would end the
// process with "out of memory".
func checkPackHeader(f io.ReaderAt, size int64) (int, error) {
	var hdr [12]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil || string(hdr[:4]) != "PACK" {
		return 0, errors.New("the pack received is damaged: no pack header")
	}
	if v := binary.BigEndian.Uint32(hdr[4:]); v != 2 && v != 3 {
		return 0, fmt.Errorf("the pack received has version %d; versions 2 and 3 are read", v)
	}
	count := int64(binary.BigEndian.Uint32(hdr[8:]))
	if room := (size - 12 - 20) / minPackEntry; count > room {
		return 0, fmt.Errorf("the pack received is damaged: its header claims %d objects, but its %d bytes hold at most %d", count, size, max(room, 0))
	}
	return int(count), nil
}

// TransferLeftoverAge is how old a temporary pack must be, besides being
// unlocked, before CleanTransferDir removes it: it covers the instant
// between a transfer creating its file and locking it.
const TransferLeftoverAge = time.Minute

// CleanTransferDir removes the temporary packs of transfers that died. A
// live transfer holds an flock on its file (NewStream, Install), which
// the kernel drops when the process dies; a file nobody holds that is older
// than TransferLeftoverAge is a leftover. Errors are ignored: a read-only
// data directory keeps its leftovers and still opens.
func CleanTransferDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !(strings.HasSuffix(name, ".pack") || strings.HasSuffix(name, ".idx")) {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < TransferLeftoverAge {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if ok, _ := durable.TryLock(f, nil); ok {
			os.Remove(path)
		}
		f.Close()
	}
}
