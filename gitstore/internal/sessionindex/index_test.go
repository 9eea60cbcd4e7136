package sessionindex

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func key(s string) Key {
	var k Key
	copy(k[:], s)
	return k
}

func doc(id, k, title string, words ...string) Doc {
	d := Doc{ID: id, Key: key(k), Summary: Summary{
		Title: title, Tags: []string{"t-" + id}, PartitionPath: "2026-11",
		CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 11, 2, 3, 4, 5, 6, time.UTC),
		Thoughts: len(words), Branches: 1,
	}, Terms: map[string]Term{}}
	d.Terms[strings.ToLower(title)] = Term{Fields: InTitle}
	for _, w := range words {
		t := d.Terms[w]
		t.Count++
		d.Terms[w] = t
	}
	return d
}

func cur(pairs ...string) []Current {
	var out []Current
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Current{ID: pairs[i], Key: key(pairs[i+1])})
	}
	slices.SortFunc(out, func(a, b Current) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func find(t *testing.T, v *View, words ...string) []string {
	t.Helper()
	hits, err := v.Find(words)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hits {
		ids = append(ids, v.Current(h.Session).ID)
	}
	return ids
}

// bothModes runs a test on an index in a directory and on one in memory:
// the same code must answer the same.
func bothModes(t *testing.T, test func(t *testing.T, x *Index)) {
	t.Run("disk", func(t *testing.T) { test(t, Open(filepath.Join(t.TempDir(), "index"))) })
	t.Run("memory", func(t *testing.T) { test(t, OpenMemory()) })
}

// segmentCount is how many segments the index holds now.
func segmentCount(t *testing.T, x *Index) int {
	t.Helper()
	if x.mem != nil {
		x.memMu.Lock()
		defer x.memMu.Unlock()
		return len(x.mem)
	}
	files, err := filepath.Glob(filepath.Join(x.Dir(), "*"+segSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return len(files)
}

func TestRecordsAnswerOnlyWhileTheirKeyMatches(t *testing.T) {
	bothModes(t, testRecordsAnswerOnlyWhileTheirKeyMatches)
}

func testRecordsAnswerOnlyWhileTheirKeyMatches(t *testing.T, x *Index) {
	v, err := x.View(cur("a", "1", "b", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if m := v.Missing(true); len(m) != 2 {
		t.Fatalf("missing %v, want both", m)
	}
	if err := v.Add([]Doc{doc("a", "1", "Alpha", "cache", "cache", "lock"), doc("b", "1", "Beta", "lock")}); err != nil {
		t.Fatal(err)
	}
	if got := find(t, v, "lock"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("lock: %v", got)
	}
	// A new process: b moved, c is new, a is unchanged.
	v, err = x.View(cur("a", "1", "b", "2", "c", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if m := v.Missing(true); !slices.Equal(m, []int{1, 2}) {
		t.Fatalf("missing %v, want b and c", m)
	}
	if got := find(t, v, "lock"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("lock with b stale: %v", got)
	}
	hits, _ := v.Find([]string{"cache", "alpha"})
	if len(hits) != 1 || hits[0].Terms[0].Count != 2 || hits[0].Terms[1].Fields != InTitle {
		t.Fatalf("cache alpha: %+v", hits)
	}
	sum, ok := v.Summary(0)
	want := doc("a", "1", "Alpha").Summary
	if !ok || sum.Title != "Alpha" || !sum.UpdatedAt.Equal(want.UpdatedAt) || !slices.Equal(sum.Tags, want.Tags) ||
		sum.PartitionPath != "2026-11" || sum.Branches != 1 || !sum.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("summary %+v", sum)
	}
	// Gone from the repository: never answered.
	v, _ = x.View(cur("b", "1"))
	if got := find(t, v, "cache"); len(got) != 0 {
		t.Fatalf("a session the repository lost was answered: %v", got)
	}
}

func TestListingRecordsAreNotEnoughForSearch(t *testing.T) {
	bothModes(t, testListingRecordsAreNotEnoughForSearch)
}

func testListingRecordsAreNotEnoughForSearch(t *testing.T, x *Index) {
	v, _ := x.View(cur("a", "1"))
	d := doc("a", "1", "Alpha", "cache")
	d.Terms = nil
	v.Add([]Doc{d})
	if m := v.Missing(false); len(m) != 0 {
		t.Fatalf("listing still misses %v", m)
	}
	if m := v.Missing(true); len(m) != 1 {
		t.Fatalf("search misses %v, want a", m)
	}
	v.Add([]Doc{doc("a", "1", "Alpha", "cache")})
	v, _ = x.View(cur("a", "1"))
	if m := v.Missing(true); len(m) != 0 || len(find(t, v, "cache")) != 1 {
		t.Fatalf("the record with words did not win: missing %v", m)
	}
}

func TestDamagedSegmentsAreDropped(t *testing.T) {
	dir := t.TempDir()
	x := Open(dir)
	v, _ := x.View(cur("a", "1", "b", "1"))
	v.Add([]Doc{doc("a", "1", "Alpha", "cache")})
	v.Add([]Doc{doc("b", "1", "Beta", "cache")})
	files, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(files) != 2 {
		t.Fatalf("%d segments, want 2", len(files))
	}
	// Cut one short (a crash before its data reached the disk) and flip
	// a byte of the other.
	data, _ := os.ReadFile(files[0])
	os.WriteFile(files[0], data[:len(data)/2], 0o644)
	data, _ = os.ReadFile(files[1])
	data[len(data)/2] ^= 0xff
	os.WriteFile(files[1], data, 0o644)
	v, err := x.View(cur("a", "1", "b", "1"))
	if err != nil {
		t.Fatal(err)
	}
	// The doc table is checked when a segment is opened, the dictionary
	// (where the flipped byte is) when a search first reads it.
	if m := v.Missing(true); len(m) != 1 {
		t.Fatalf("missing %v after damage, want the cut segment's session", m)
	}
	if _, err := v.Find([]string{"cache"}); err != ErrLost {
		t.Fatalf("search over a damaged dictionary: %v, want ErrLost", err)
	}
	if m := v.Missing(true); len(m) != 2 {
		t.Fatalf("missing %v after the damaged dictionary was found, want both", m)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.seg")); len(left) != 0 {
		t.Fatalf("damaged segments left: %v", left)
	}
}

func TestMergingKeepsCurrentRecordsAndDropsTheRest(t *testing.T) {
	bothModes(t, testMergingKeepsCurrentRecordsAndDropsTheRest)
}

func testMergingKeepsCurrentRecordsAndDropsTheRest(t *testing.T, x *Index) {
	n := 3 * maxSegments
	var pairs []string
	for i := range n {
		pairs = append(pairs, fmt.Sprintf("s%03d", i), "1")
	}
	v, _ := x.View(cur(pairs...))
	for i := range n {
		// One segment per session, and an outdated record of the
		// previous one each time.
		docs := []Doc{doc(fmt.Sprintf("s%03d", i), "1", "T", "word", fmt.Sprintf("w%d", i))}
		if i > 0 {
			docs = append(docs, doc(fmt.Sprintf("s%03d", i-1), "0", "T", "stale"))
		}
		if err := v.Add(docs); err != nil {
			t.Fatal(err)
		}
	}
	if got := segmentCount(t, x); got > maxSegments+1 {
		t.Fatalf("%d segments after %d additions: not merged", got, n)
	}
	v, _ = x.View(cur(pairs...))
	if got := find(t, v, "word"); len(got) != n {
		t.Fatalf("word in %d sessions, want %d", len(got), n)
	}
	if got := find(t, v, "stale"); len(got) != 0 {
		t.Fatalf("outdated records answered: %v", got)
	}
	if got := find(t, v, "w7", "word"); !slices.Equal(got, []string{"s007"}) {
		t.Fatalf("w7 word: %v", got)
	}
}

func TestSegmentParseRefusesGarbage(t *testing.T) {
	enc := []encDoc{{id: "a", key: key("1"), flags: flagTerms, sum: encodeSummary(Summary{})}}
	data := encode(enc, map[string][]posting{"x": {{doc: 0, count: 1}}})
	if _, err := parse(data); err != nil {
		t.Fatal(err)
	}
	// Read from a file as a new process reads it: the doc table at
	// once, the dictionary at the first search.
	readFile := func(b []byte) error {
		path := filepath.Join(t.TempDir(), "s.seg")
		os.WriteFile(path, b, 0o644)
		s, err := openSegment(path)
		if err != nil {
			return err
		}
		defer s.close()
		_, err = s.lookup("x")
		return err
	}
	if err := readFile(data); err != nil {
		t.Fatal(err)
	}
	for i := range data {
		bad := slices.Clone(data)
		bad[i] ^= 0x40
		if _, err := parse(bad); err == nil {
			t.Fatalf("a flipped byte at %d passed", i)
		}
		if err := readFile(bad); err == nil {
			t.Fatalf("a flipped byte at %d passed, read from a file", i)
		}
	}
	for n := range len(data) {
		if _, err := parse(data[:n]); err == nil {
			t.Fatalf("a segment cut at %d passed", n)
		}
		if err := readFile(data[:n]); err == nil {
			t.Fatalf("a segment cut at %d passed, read from a file", n)
		}
	}
}

// TestSummaryRoundTrip: every field of a summary comes back from its
// encoding as it went in, and a summary cut short or with bytes left over
// is refused.
func TestSummaryRoundTrip(t *testing.T) {
	in := Summary{
		Title: "Tïtle", Description: "a\nlonger description", Tags: []string{"x", "", "z"},
		PartitionPath: "2026/11", CreatedAt: time.Date(1969, 7, 20, 20, 17, 40, 5, time.UTC),
		UpdatedAt: time.Date(2026, 11, 24, 15, 0, 0, 999999999, time.UTC), Thoughts: 1 << 20, Branches: 7,
	}
	data := encodeSummary(in)
	out, err := decodeSummary(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n in %+v\nout %+v", in, out)
	}
	if _, err := decodeSummary(data[:len(data)-1]); err == nil {
		t.Error("a summary cut short decoded")
	}
	if _, err := decodeSummary(append(data, 0)); err == nil {
		t.Error("a summary with a byte left over decoded")
	}
}

// TestMemoryIndexIsSharedAndDropped: in memory, what one view adds is
// what the next view of the same index finds (as files are on disk), and
// Drop forgets it all.
func TestMemoryIndexIsSharedAndDropped(t *testing.T) {
	bothModes(t, func(t *testing.T, x *Index) {
		v, _ := x.View(cur("a", "1"))
		if err := v.Add([]Doc{doc("a", "1", "Alpha", "cache")}); err != nil {
			t.Fatal(err)
		}
		v.Close()
		v, _ = x.View(cur("a", "1"))
		if m := v.Missing(true); len(m) != 0 || !slices.Equal(find(t, v, "cache"), []string{"a"}) {
			t.Fatalf("a new view misses %v", m)
		}
		if err := x.Drop(); err != nil {
			t.Fatal(err)
		}
		v, _ = x.View(cur("a", "1"))
		if m := v.Missing(false); len(m) != 1 || segmentCount(t, x) != 0 {
			t.Fatalf("after Drop: missing %v, %d segments", m, segmentCount(t, x))
		}
	})
}
