package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestCheckEachReturnsTheFirstFailureInOrder: the checks run side by side,
// and the error returned is the one of the lowest index that failed,
// after every check below it ran, whichever goroutine finished first.
func TestCheckEachReturnsTheFirstFailureInOrder(t *testing.T) {
	for round := 0; round < 5000; round++ {
		var ran [64]atomic.Bool
		err := checkEach(context.Background(), len(ran), func(_ context.Context, i int) error {
			ran[i].Store(true)
			if i == 17 || i == 40 {
				return fmt.Errorf("check %d failed", i)
			}
			return nil
		})
		if err == nil || err.Error() != "check 17 failed" {
			t.Fatalf("round %d: err = %v, want the failure of check 17", round, err)
		}
		for i := 0; i < 17; i++ {
			if !ran[i].Load() {
				t.Fatalf("round %d: check %d, below the failed one, did not run", round, i)
			}
		}
	}
	var n atomic.Int64
	if err := checkEach(context.Background(), 100, func(context.Context, int) error { n.Add(1); return nil }); err != nil || n.Load() != 100 {
		t.Fatalf("all pass: err %v after %d checks, want nil after 100", err, n.Load())
	}
	if err := checkEach(context.Background(), 0, func(context.Context, int) error { return errors.New("ran") }); err != nil {
		t.Fatalf("no checks: %v", err)
	}
}

// TestPullQuarantinesManySessionsInOrder: a pull that brings many
// sessions, several of them damaged, quarantines exactly the damaged ones,
// reports them in the order of their sessions (the checks run side by
// side, the result does not show it), and brings the others in.
func TestPullQuarantinesManySessionsInOrder(t *testing.T) {
	f := newIncomingFixture(t, false)
	ctx := context.Background()
	ids := []string{f.s1, f.s2}
	for i := 0; i < 10; i++ {
		sess, err := f.al.StartSession(ctx, ledger.CreateSessionParams{Title: fmt.Sprintf("more %d", i)}, ledger.Author{Name: "a"})
		if err != nil {
			t.Fatal(err)
		}
		f.think(f.al, sess.ID, fmt.Sprintf("first thought of more %d", i))
		ids = append(ids, sess.ID)
	}
	if _, err := Push(ctx, f.a, f.remote, TransferOptions{}); err != nil {
		t.Fatal(err)
	}
	f.git("fetch", "-q", "origin")
	bad := map[string]bool{}
	for _, i := range []int{3, 7, 11} {
		id := ids[i]
		bad[id] = true
		f.commitOn(id, "not a thoughtbox commit", func(folder string) {
			if err := os.WriteFile(filepath.Join(folder, "stray.txt"), []byte("stray\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
	res := f.pull(TransferOptions{})
	var got []string
	for _, q := range res.Quarantined {
		got = append(got, q.Session)
		if !bad[q.Session] {
			t.Errorf("quarantined %s, which was not damaged: %q", q.Session, q.Problems)
		}
		if !strings.Contains(strings.Join(q.Problems, "\n"), "Thoughtbox-Session") {
			t.Errorf("problems of %s = %q, want the missing trailer", q.Session, q.Problems)
		}
	}
	if len(got) != len(bad) || !sort.StringsAreSorted(got) {
		t.Errorf("quarantined %v, want the %d damaged sessions in order", got, len(bad))
	}
	if want := len(ids) - len(bad); len(res.Created) != want {
		t.Errorf("created %d refs, want %d: %+v", len(res.Created), want, res.Created)
	}
	for _, id := range ids {
		live, err := f.b.ReadRef(mainRef(id))
		if err != nil {
			t.Fatal(err)
		}
		if bad[id] != (live == zeroHash) {
			t.Errorf("session %s (damaged %v): live ref %s", id, bad[id], live)
		}
	}
}

// TestPullBoundsFilesOfOlderCommits: a file over the most a file may hold
// that the remote's chain added and removed again (so the tip does not
// show it) is found by the walk of the new commits, and the session is
// quarantined.
func TestPullBoundsFilesOfOlderCommits(t *testing.T) {
	f := newIncomingFixture(t, false)
	const limit = 1000
	size := gitstore.MaxIncomingFileBytes(limit) + 1
	f.commitOn(f.s2, "Thought 2\n\nThoughtbox-Session: "+f.s2+"\n", func(folder string) {
		big, err := os.Create(filepath.Join(folder, "big.bin"))
		if err != nil {
			t.Fatal(err)
		}
		if err := big.Truncate(size); err != nil {
			t.Fatal(err)
		}
		big.Close()
	})
	f.commitOn(f.s2, "Thought 3\n\nThoughtbox-Session: "+f.s2+"\n", func(folder string) {
		if err := os.Remove(filepath.Join(folder, "big.bin")); err != nil {
			t.Fatal(err)
		}
	})
	res := f.pull(TransferOptions{MaxThoughtBytes: limit})
	f.wantQuarantined(res, f.s2, fmt.Sprintf("is %d bytes: more than %d, the most a file may hold", size, size-1), zeroHash)
}
