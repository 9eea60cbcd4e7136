package gitstore

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/refs"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
	"github.com/thoughtbox/thoughtbox/internal/durable"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// ErrLogDamaged is returned when the write-ahead log holds a record that
// fails its checksum with intact records after it. A torn tail (a write
// cut by a crash before its fsync, never acknowledged) is cut off; damage
// in the middle is not a torn write, and the records after it were
// acknowledged, so nothing is cut, replayed or published until
// RepairLog (thoughtbox verify --repair) has salvaged what checks out.
var ErrLogDamaged = wal.ErrDamaged

// LogDamageError says where: the record at Offset fails its checksum or
// does not decode, and an intact record starts at Next.
type LogDamageError = wal.DamageError

// storageError makes log damage met by a replay a STORAGE_ERROR for
// whoever meets it through the ledger (an MCP client); errors.As still
// finds the LogDamageError.
func storageError(err error) error { return ledger.Errorf(ledger.CodeStorage, "%w", err) }

// LogRepair reports what RepairLog did.
type LogRepair struct {
	// Kept counts the records salvaged; Dropped the intact records left
	// out because a ref move in them no longer follows (its chain lost a
	// record to the damage).
	Kept, Dropped int
	// Lost lists the damaged byte ranges [start, end) that held no intact
	// record.
	Lost [][2]int64
	// Saved is where the damaged log was copied before the repair.
	Saved string
	// DroppedRefs names the refs whose moves were left out.
	DroppedRefs []string
}

// RepairLog salvages a damaged write-ahead log of the repository at gitDir:
// every record that checks out is kept, in order, except those whose ref
// moves no longer follow from the refs before them (they built on a record
// the damage took); the original is copied aside first. It takes the log's
// lock, so no writer of this repository runs meanwhile. A log without
// damage is left as it is (Kept counts its records).
func RepairLog(gitDir string) (*LogRepair, error) {
	path := filepath.Join(gitDir, "thoughtbox", "log")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rec := durable.NewRecord(filepath.Join(gitDir, "thoughtbox", "log.holder"))
	if err := durable.Lock(context.Background(), f, rec, 10*time.Second); err != nil {
		return nil, err
	}
	defer durable.Unlock(f)
	defer rec.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	if len(data) < len(wal.Magic) || string(data[:len(wal.Magic)]) != string(wal.Magic) {
		return nil, fmt.Errorf("%s is not a Thoughtbox log", path)
	}
	rep := &LogRepair{}
	out, damaged := salvageLog(gitDir, data, rep)
	if !damaged {
		return rep, nil
	}
	rep.Saved = path + ".damaged-" + time.Now().UTC().Format("20060102T150405Z")
	if err := writeAside(rep.Saved, data); err != nil {
		return nil, fmt.Errorf("keep a copy of the damaged log: %w", err)
	}
	// The salvaged log replaces the damaged one (written aside, synced,
	// renamed); the next open replays it into Git.
	if err := writeAside(path+".repaired", out); err != nil {
		return nil, err
	}
	if err := durable.Rename(path+".repaired", path); err != nil {
		return nil, err
	}
	if err := durable.SyncDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return rep, nil
}

// salvageLog reads the log's records in data and returns the log of those
// kept, counting in rep what it kept, lost and dropped. damaged is false
// when nothing but a torn tail was wrong, which is no damage: the record
// was never acknowledged.
func salvageLog(gitDir string, data []byte, rep *LogRepair) (out []byte, damaged bool) {
	// The refs as published, then as each kept record moves them.
	moved := map[string]hash{}
	current := func(name string) hash {
		if h, ok := moved[name]; ok {
			return h
		}
		h, err := refs.Read(gitDir, name)
		if err != nil {
			return zeroHash
		}
		return h
	}
	out = append([]byte(nil), wal.Magic...)
	dropped := map[string]bool{}
	for off := len(wal.Magic); off+8 <= len(data); {
		n := int(uint32(data[off])<<24 | uint32(data[off+1])<<16 | uint32(data[off+2])<<8 | uint32(data[off+3]))
		if n == 0 && wal.FindRecord(data, off) < 0 {
			break // the zero-filled tail
		}
		var rec *batch
		if n > 0 && off+8+n <= len(data) {
			rec, _, _ = wal.DecodeRecord(data[off : off+8+n])
		}
		if rec == nil {
			next := wal.FindRecord(data, off+1)
			if next < 0 {
				// A torn tail: never acknowledged, not damage.
				if damaged {
					rep.Lost = append(rep.Lost, [2]int64{int64(off), int64(len(data))})
				}
				break
			}
			damaged = true
			rep.Lost = append(rep.Lost, [2]int64{int64(off), int64(next)})
			off = next
			continue
		}
		follows := true
		for _, u := range rec.Updates {
			if current(u.Name) != u.Old {
				follows = false
			}
		}
		if follows {
			for _, u := range rec.Updates {
				moved[u.Name] = u.New
			}
			out = append(out, data[off:off+8+n]...)
			rep.Kept++
		} else {
			rep.Dropped++
			for _, u := range rec.Updates {
				if !dropped[u.Name] {
					dropped[u.Name] = true
					rep.DroppedRefs = append(rep.DroppedRefs, u.Name)
				}
			}
		}
		off += 8 + n
	}
	return out, damaged
}

// writeAside writes data to a new file at path and syncs it.
func writeAside(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
