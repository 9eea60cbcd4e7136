package access

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func accessID(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012d", i*7919, i) }

// TestAccessJournalLaterWins: where accessed.json and the journal
// disagree, the later time is the answer, for a file searched by offset
// and for one read whole; a bad line is skipped and a last line without
// its newline (a write cut short) is not trusted.
func TestAccessJournalLaterWins(t *testing.T) {
	base := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	for _, n := range []int{10, 3000} { // read whole; past accessWhole
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			tb := t.TempDir()
			path := filepath.Join(tb, "accessed.json")
			m := map[string]time.Time{}
			for i := range n {
				m[accessID(i)] = base.Add(time.Duration(i) * time.Second)
			}
			data, _ := json.Marshal(m)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			line := func(i int, at time.Time) string {
				return accessID(i) + " " + at.Format(time.RFC3339Nano) + "\n"
			}
			journal := line(1, base.Add(time.Hour)) + // later than the file
				line(2, base.Add(-time.Hour)) + // earlier
				"not a line\n" +
				"BAD-ID " + base.Format(time.RFC3339Nano) + "\n" +
				accessID(4) + " yesterday\n" +
				line(n+1, base.Add(2*time.Hour)) + // only in the journal
				line(1, base.Add(30*time.Minute)) + // earlier than its first line
				strings.TrimSuffix(line(5, base.Add(3*time.Hour)), "\n") // torn
			if err := os.WriteFile(filepath.Join(tb, "accessed.log"), []byte(journal), 0o600); err != nil {
				t.Fatal(err)
			}
			want := map[string]time.Time{
				accessID(1):     base.Add(time.Hour),
				accessID(2):     base.Add(2 * time.Second),
				accessID(4):     base.Add(4 * time.Second),
				accessID(5):     base.Add(5 * time.Second),
				accessID(n + 1): base.Add(2 * time.Hour),
			}
			a := New(path)
			for id, w := range want {
				if got := a.At(id); !got.Equal(w) {
					t.Errorf("at %s: %v, want %v", id, got, w)
				}
			}
			if a.m != nil {
				t.Fatal("at read the times whole")
			}
			all := New(path).All()
			for id, w := range want {
				if !all[id].Equal(w) {
					t.Errorf("all %s: %v, want %v", id, all[id], w)
				}
			}
			if len(all) != n+1 || !all["BAD-ID"].IsZero() {
				t.Errorf("all holds %d times, want %d", len(all), n+1)
			}
		})
	}
}

// TestAccessJournalFoldKeepsEveryTime: two stores on one directory save
// in turn and at once; their journals are folded into accessed.json
// several times, and every time either recorded is there at the end.
func TestAccessJournalFoldKeepsEveryTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "accessed.json")
	s1, s2 := New(path), New(path)
	base := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	// Two stores' times, interleaved saves (a store saves as it closes).
	s1.Record(accessID(1), base.Add(time.Minute))
	s2.Record(accessID(2), base.Add(2*time.Minute))
	s2.Record(accessID(1), base.Add(3*time.Minute))
	s1.Save()
	s2.Save()

	// Then many saves of two Times on the same files at once, enough
	// to pass the bound several times (3,200 lines of 68 bytes).
	want := map[string]time.Time{accessID(1): base.Add(3 * time.Minute), accessID(2): base.Add(2 * time.Minute)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := New(path)
			for save := range 40 {
				for k := range 20 {
					id := fmt.Sprintf("%08d-g%d-%04d-%02d", save*20+k, g, save, k)
					at := base.Add(time.Duration(save*20+k) * time.Millisecond)
					a.Record(id, at)
					mu.Lock()
					want[id] = at
					mu.Unlock()
				}
				// Both record a shared id; the later time must win.
				shared := base.Add(time.Duration(save*2+g) * time.Hour)
				a.Record("shared", shared)
				if k := a.At(accessID(1)); k.Before(base.Add(3 * time.Minute)) {
					t.Errorf("a time went back: %v", k)
				}
				a.Save()
			}
		}()
	}
	wg.Wait()
	want["shared"] = base.Add(time.Duration(39*2+1) * time.Hour)

	fi, err := os.Stat(path)
	if err != nil || fi.Size() < 64<<10 {
		t.Fatalf("accessed.json after the folds: %v, %v", fi, err)
	}
	for _, src := range []string{"", "the file alone"} {
		var got map[string]time.Time
		if src == "" {
			s := New(path)
			got = s.All()
			for id, w := range want {
				if at := s.At(id); !at.Equal(w) {
					t.Fatalf("At %s: %v, want %v", id, at, w)
				}
			}
			s.Save()
		} else {
			// Fold what is left, then the file must hold everything.
			a := New(path)
			a.fold()
			if _, err := os.Stat(a.journalPath()); !os.IsNotExist(err) {
				t.Fatalf("the journal is still there after a fold: %v", err)
			}
			got = readAccessJSON(path)
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d times, want %d", src, len(got), len(want))
		}
		for id, w := range want {
			if !got[id].Equal(w) {
				t.Fatalf("%s: %s: %v, want %v", src, id, got[id], w)
			}
		}
	}
}

// TestAccessJournalLeavesTheLargeFile: on a large ledger a save of one
// access appends to the journal and leaves accessed.json as it is, until
// the journal passes its bound; then one save folds it in, and a fold
// that stopped half way (its journal left aside) is finished by the next.
func TestAccessJournalLeavesTheLargeFile(t *testing.T) {
	base := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	m := map[string]time.Time{}
	for i := range 40000 { // 2.7 MB: a bound of 64 KB
		m[accessID(i)] = base.Add(time.Duration(i) * time.Second)
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "accessed.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	os.Chtimes(path, old, old)
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	bound := accessJournalBound(before.Size())
	unchanged := func() bool {
		fi, err := os.Stat(path)
		return err == nil && os.SameFile(fi, before) && fi.ModTime().Equal(before.ModTime()) && fi.Size() == before.Size()
	}

	// As a store does: show one session, close.
	s := New(path)
	later := base.Add(100 * time.Hour)
	if got := s.At(accessID(17)); !got.Equal(m[accessID(17)]) {
		t.Fatalf("%v, want %v", got, m[accessID(17)])
	}
	s.Record(accessID(17), later)
	s.Save()
	if !unchanged() {
		t.Fatal("a save of one access rewrote accessed.json")
	}
	m[accessID(17)] = later

	a := New(path)
	journal := a.journalPath()
	folded := false
	for i := 0; !folded; i++ {
		fi, err := os.Stat(journal)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > bound {
			t.Fatalf("the journal grew to %d bytes, past %d, without a fold", fi.Size(), bound)
		}
		for k := range 10 {
			id := accessID((i*10 + k) * 3 % 40000)
			at := later.Add(time.Duration(i*10+k) * time.Second)
			a.Record(id, at)
			m[id] = at
		}
		a.Save()
		_, err = os.Stat(journal)
		folded = os.IsNotExist(err)
		if !folded && !unchanged() {
			t.Fatalf("save %d rewrote accessed.json before the bound", i)
		}
		if folded && fi.Size()+10*68 < bound {
			t.Fatalf("folded at %d bytes, bound %d", fi.Size(), bound)
		}
	}
	if unchanged() {
		t.Fatal("the fold did not replace accessed.json")
	}
	if got := readAccessJSON(path); len(got) != len(m) {
		t.Fatalf("after the fold: %d times, want %d", len(got), len(m))
	} else {
		for id, w := range m {
			if !got[id].Equal(w) {
				t.Fatalf("after the fold %s: %v, want %v", id, got[id], w)
			}
		}
	}

	// A fold that stopped after moving the journal aside: readers still
	// see its times, and the next fold takes them in with the journal's.
	a.Record(accessID(1), later.Add(time.Hour))
	a.Save()
	if err := os.Rename(journal, a.foldingPath()); err != nil {
		t.Fatal(err)
	}
	a.Record(accessID(2), later.Add(2*time.Hour))
	a.Save()
	b := New(path)
	if got := b.At(accessID(1)); !got.Equal(later.Add(time.Hour)) {
		t.Fatalf("a journal left aside was not read: %v", got)
	}
	b.fold()
	got := readAccessJSON(path)
	if !got[accessID(1)].Equal(later.Add(time.Hour)) || !got[accessID(2)].Equal(later.Add(2*time.Hour)) {
		t.Fatalf("after a fold that finished another: %v, %v", got[accessID(1)], got[accessID(2)])
	}
	for _, p := range []string{journal, a.foldingPath()} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s is still there: %v", p, err)
		}
	}
}

// TestAccessJournalRaces: the two moments where another process's save
// can cut in, made to happen. An append whose journal is folded between
// its open and its write writes again to the new journal; a fold that
// finds another fold under way leaves the journal to it rather than
// replace accessed.json with a file that lacks the other's times.
func TestAccessJournalRaces(t *testing.T) {
	base := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "accessed.json")
	a, b := New(path), New(path)
	a.Record(accessID(1), base)
	a.Save()

	b.Record(accessID(2), base.Add(time.Hour))
	accessHook = func(stage string) {
		if stage == "opened" {
			accessHook = nil
			a.fold() // b's journal is moved aside, read and removed now
		}
	}
	b.Save()
	accessHook = nil
	for i, w := range map[int]time.Time{1: base, 2: base.Add(time.Hour)} {
		if got := New(path).All()[accessID(i)]; !got.Equal(w) {
			t.Fatalf("%d after an append cut by a fold: %v, want %v", i, got, w)
		}
	}

	a.Record(accessID(3), base.Add(2*time.Hour))
	a.Save()
	accessHook = func(stage string) {
		if stage == "merged" {
			accessHook = nil
			b.Record(accessID(4), base.Add(3*time.Hour))
			b.Save()
			b.fold()
		}
	}
	a.fold()
	accessHook = nil
	c := New(path)
	for i, w := range map[int]time.Time{1: base, 2: base.Add(time.Hour), 3: base.Add(2 * time.Hour), 4: base.Add(3 * time.Hour)} {
		if got := c.All()[accessID(i)]; !got.Equal(w) {
			t.Fatalf("%d after two folds at once: %v, want %v", i, got, w)
		}
	}
	c.fold()
	if got := readAccessJSON(path); len(got) != 4 {
		t.Fatalf("accessed.json holds %d times after the last fold, want 4", len(got))
	}
}
