package gitstore

import (
	"bufio"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// Each flush adds a pack, so packs are merged to keep their number small:
// after a flush, while there are more than maxPacks, the newest packs are
// merged geometrically (like `git repack --geometric=2`), so each byte is
// rewritten O(log n) times. A merge copies the compressed entries as they
// are — no object is inflated — re-pointing OFS deltas to their bases' new
// offsets and dropping objects already copied from another pack.
const maxPacks = 8

// pickMerge chooses the newest packs to merge: starting from the newest,
// take the next older pack while it is less than twice as big as all those
// taken, so the result keeps the sizes geometric.
func pickMerge(newestFirst []*packEntry) []*packEntry {
	if len(newestFirst) <= maxPacks {
		return nil
	}
	k := 1
	var sum int64 = newestFirst[0].size
	for k < len(newestFirst) && (newestFirst[k].size < 2*sum || len(newestFirst)-k >= maxPacks) {
		sum += newestFirst[k].size
		k++
	}
	if k < 2 {
		return nil
	}
	return newestFirst[:k]
}

type rawEntry struct {
	id      hash
	off     int64 // in its old pack
	typ     int
	size    int
	baseOff int64 // OFS_DELTA: the base's offset in the old pack
	refBase []byte
	data    []byte // the compressed payload
}

// readRawEntries lists a pack's entries in file order without inflating.
func readRawEntries(pe *packEntry, packPath string) ([]rawEntry, error) {
	data, err := os.ReadFile(packPath)
	if err != nil {
		return nil, err
	}
	if len(data) < 32 || string(data[:4]) != "PACK" {
		return nil, fmt.Errorf("%s is not a pack", packPath)
	}
	iter, err := pe.idx.Entries()
	if err != nil {
		return nil, err
	}
	var entries []rawEntry
	for {
		e, err := iter.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		entries = append(entries, rawEntry{id: e.Hash, off: int64(e.Offset)})
	}
	if int(binary.BigEndian.Uint32(data[8:])) != len(entries) {
		return nil, fmt.Errorf("%s: header and index disagree on the object count", packPath)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].off < entries[j].off })
	end := int64(len(data) - 20)
	for i := range entries {
		e := &entries[i]
		next := end
		if i+1 < len(entries) {
			next = entries[i+1].off
		}
		p := e.off
		c := data[p]
		p++
		e.typ = int(c>>4) & 7
		e.size = int(c & 0x0f)
		for shift := 4; c&0x80 != 0; shift += 7 {
			c = data[p]
			p++
			e.size |= int(c&0x7f) << shift
		}
		switch e.typ {
		case ofsDeltaType:
			c = data[p]
			p++
			dist := int64(c & 0x7f)
			for c&0x80 != 0 {
				c = data[p]
				p++
				dist = ((dist + 1) << 7) | int64(c&0x7f)
			}
			e.baseOff = e.off - dist
		case 7: // REF_DELTA
			e.refBase = data[p : p+20]
			p += 20
		}
		if p > next {
			return nil, fmt.Errorf("%s: malformed entry at %d", packPath, e.off)
		}
		e.data = data[p:next]
	}
	return entries, nil
}

// mergePacks writes one pack holding every object of packs (oldest first in
// the result, so that bases precede their deltas), durably, and removes the
// merged packs.
func mergePacks(packDir string, newestFirst []*packEntry) error {
	type key struct {
		pack int
		off  int64
	}
	newOff := map[key]int64{}
	where := map[hash]int64{}
	var out []struct {
		id   hash
		head []byte
		data []byte
	}
	pos := int64(12)
	for pi := len(newestFirst) - 1; pi >= 0; pi-- {
		pe := newestFirst[pi]
		entries, err := readRawEntries(pe, filepath.Join(packDir, pe.name+".pack"))
		if err != nil {
			return err
		}
		for _, e := range entries {
			if off, dup := where[e.id]; dup {
				newOff[key{pi, e.off}] = off
				continue
			}
			head := entryHeader(e.typ, e.size)
			switch {
			case e.typ == ofsDeltaType:
				base, ok := newOff[key{pi, e.baseOff}]
				if !ok {
					return fmt.Errorf("pack %s: delta at %d has no base at %d", pe.name, e.off, e.baseOff)
				}
				head = appendOfsOffset(head, pos-base)
			case e.refBase != nil:
				head = append(head, e.refBase...)
			}
			newOff[key{pi, e.off}] = pos
			where[e.id] = pos
			out = append(out, struct {
				id   hash
				head []byte
				data []byte
			}{e.id, head, e.data})
			pos += int64(len(head) + len(e.data))
		}
	}

	tmp, err := os.CreateTemp(packDir, "tmp_pack_")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	cw := &countingWriter{w: bw, sum: sha1.New()}
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(out)))
	cw.Write(hdr[:])
	idx := new(idxfile.Writer)
	idx.OnHeader(uint32(len(out)))
	for _, o := range out {
		off := cw.n
		crc := crc32.NewIEEE()
		crc.Write(o.head)
		crc.Write(o.data)
		cw.Write(o.head)
		if _, err := cw.Write(o.data); err != nil {
			return err
		}
		idx.Add(o.id, uint64(off), crc.Sum32())
	}
	if _, err := finishPack(packDir, tmp, bw, cw, idx); err != nil {
		return err
	}
	for _, pe := range newestFirst {
		base := filepath.Join(packDir, pe.name)
		os.Remove(base + ".idx") // the index first: without it git ignores the pack
		os.Remove(base + ".pack")
	}
	return syncDir(packDir)
}
