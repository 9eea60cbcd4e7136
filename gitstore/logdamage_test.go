package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// logWithRecords writes sessions thoughts round-robin through a store that
// does not flush, and returns a copy of the repository taken before the
// store closed: its log holds every acknowledged thought, its refs none.
func logWithRecords(t *testing.T, sessions, thoughts int) (repo string, ids []string) {
	t.Helper()
	ctx := context.Background()
	live := filepath.Join(t.TempDir(), "live.git")
	s, err := Open(live, Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(s, ledger.Options{})
	for i := 0; i < sessions; i++ {
		sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: fmt.Sprintf("s%d", i)}, ledger.Author{Name: "t"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
	}
	for n := 1; n <= thoughts; n++ {
		for _, id := range ids {
			if _, err := l.AddThought(ctx, id, ledger.ThoughtInput{Thought: fmt.Sprintf("thought %d of %s", n, id), NextThoughtNeeded: true}, ledger.Author{Name: "t"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	repo = filepath.Join(t.TempDir(), "copy.git")
	if out, err := exec.Command("cp", "-a", live, repo).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	t.Cleanup(func() { s.Close() })
	return repo, ids
}

// recordOffsets lists where each record of a log starts.
func recordOffsets(data []byte) []int {
	var out []int
	for off := len(wal.Magic); off+8 <= len(data); {
		n := int(uint32(data[off])<<24 | uint32(data[off+1])<<16 | uint32(data[off+2])<<8 | uint32(data[off+3]))
		if n == 0 {
			break
		}
		out = append(out, off)
		off += 8 + n
	}
	return out
}

// TestLogDamageInTheMiddle: one flipped byte in a middle record is damage,
// not a torn tail: opening fails naming the file and the offset, the log is
// left byte for byte as it was, and RepairLog then keeps every record that
// checks out — all of the other sessions' thoughts.
func TestLogDamageInTheMiddle(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 44 durable records")
	}
	repo, ids := logWithRecords(t, 4, 10)
	logPath := filepath.Join(repo, "thoughtbox", "log")
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	offs := recordOffsets(data)
	if len(offs) < 40 {
		t.Fatalf("the log holds %d records, want at least 40", len(offs))
	}
	// Record 14 (a thought of the second session, round-robin after the
	// four starts): flip a byte of its payload.
	victim := offs[13]
	data[victim+20] ^= 0x40
	if err := os.WriteFile(logPath, data, 0o644); err != nil {
		t.Fatal(err)
	}

	_, err = Open(repo, Options{})
	var de *LogDamageError
	if !errors.As(err, &de) || !errors.Is(err, ErrLogDamaged) || de.Offset != int64(victim) || de.Path != logPath {
		t.Fatalf("Open of a damaged log = %v; want a LogDamageError at byte %d of %s", err, victim, logPath)
	}
	after, _ := os.ReadFile(logPath)
	if !bytes.Equal(after, data) {
		t.Fatal("opening a damaged log changed it")
	}

	rep, err := RepairLog(repo)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Saved == "" || len(rep.Lost) != 1 || rep.Lost[0][0] != int64(victim) {
		t.Fatalf("repair = %+v", rep)
	}
	if saved, _ := os.ReadFile(rep.Saved); !bytes.Equal(saved, data) {
		t.Fatal("the damaged log was not kept aside as it was")
	}
	s, err := Open(repo, Options{})
	if err != nil {
		t.Fatalf("open after repair: %v", err)
	}
	defer s.Close()
	l := ledger.New(s, ledger.Options{})
	lost := 0
	for _, id := range ids {
		v, err := l.View(context.Background(), id)
		if err != nil {
			t.Fatalf("session %s after repair: %v", id, err)
		}
		lost += 10 - v.Session.ThoughtCount
		if !v.Integrity.Valid {
			t.Errorf("session %s is not valid after repair: %+v", id, v.Integrity)
		}
	}
	// Only the damaged record's session loses thoughts: the damaged one
	// and those built on it.
	if lost == 0 || lost > 10 || rep.Dropped != lost-1 {
		t.Fatalf("lost %d thoughts, dropped %d records; want only the damaged session's tail", lost, rep.Dropped)
	}
	if len(rep.DroppedRefs) != 1 {
		t.Fatalf("dropped refs %v, want the one chain", rep.DroppedRefs)
	}
	if _, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command("git", "--git-dir", repo, "fsck", "--strict").CombinedOutput(); err != nil {
			t.Fatalf("git fsck after repair: %v\n%s", err, out)
		}
	}
}

// TestTornTailStillCut: a record cut short at the end of the log (a write
// that died before its fsync) is cut off as before; the store opens.
func TestTornTailStillCut(t *testing.T) {
	repo, _ := logWithRecords(t, 1, 3)
	logPath := filepath.Join(repo, "thoughtbox", "log")
	data, _ := os.ReadFile(logPath)
	offs := recordOffsets(data)
	last := offs[len(offs)-1]
	n := int(uint32(data[last])<<24 | uint32(data[last+1])<<16 | uint32(data[last+2])<<8 | uint32(data[last+3]))
	// Keep half of the last record, then zeros, as a crash leaves it.
	torn := append([]byte(nil), data[:last+8+n/2]...)
	torn = append(torn, make([]byte, 4096)...)
	if err := os.WriteFile(logPath, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(repo, Options{})
	if err != nil {
		t.Fatalf("a torn tail must not stop the store: %v", err)
	}
	s.Close()
}
