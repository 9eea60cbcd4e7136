package sessionindex

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestListingPages(t *testing.T) {
	x := Open(filepath.Join(t.TempDir(), "index"))
	var pairs []string
	var docs []Doc
	for i := range 25 {
		id := fmt.Sprintf("s%02d", i)
		pairs = append(pairs, id, "k"+id)
		d := doc(id, "k"+id, "Title "+id, "w")
		d.Summary.Thoughts = i
		docs = append(docs, d)
	}
	v, err := x.View(cur(pairs...))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if err := v.Add(docs); err != nil {
		t.Fatal(err)
	}
	// A listing order of its own: the reverse of the ids.
	order := make([]int, v.Len())
	for i := range order {
		order[i] = v.Len() - 1 - i
	}
	stamp := Stamp{1, 2, 3}
	if err := v.WriteListing(stamp, order); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ off, lim int }{{0, 10}, {10, 10}, {20, 10}, {25, 5}, {30, 1}, {0, 1 << 62}, {24, 1}} {
		page, total, ok := x.ReadListing(stamp, c.off, c.lim)
		if !ok || total != 25 {
			t.Fatalf("%+v: ok %v, total %d", c, ok, total)
		}
		want := []ListedSession{}
		for k := c.off; k < min(25, c.off+c.lim); k++ {
			ci := order[k]
			s, _ := v.Summary(ci)
			want = append(want, ListedSession{ID: v.Current(ci).ID, Summary: s})
		}
		if !reflect.DeepEqual(page, want) {
			t.Fatalf("%+v: got %+v\nwant %+v", c, page, want)
		}
	}
	// Another state of the refs: no answer, and the file stays (it is
	// right for its own stamp).
	if _, _, ok := x.ReadListing(Stamp{9}, 0, 10); ok {
		t.Fatal("a listing answered for another stamp")
	}
	path := filepath.Join(x.Dir(), listingName)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Every byte flipped in turn: never a wrong page, and a damaged file
	// is deleted.
	for i := range data {
		bad := append([]byte{}, data...)
		bad[i] ^= 0x20
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		page, _, ok := x.ReadListing(stamp, 0, 100)
		if ok {
			t.Fatalf("byte %d flipped: a page was read (%d rows)", i, len(page))
		}
		if _, err := os.Stat(path); err == nil && i >= 8 && i < 28 {
			continue // the stamp's bytes: another state's listing, kept
		} else if err == nil {
			t.Fatalf("byte %d flipped: the damaged listing was kept", i)
		}
	}
	// A record missing from the view cannot be listed.
	if err := v.WriteListing(stamp, []int{0}); err != nil {
		t.Fatal(err)
	}
	v2, err := x.View(cur("zz", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	if err := v2.WriteListing(stamp, []int{0}); err == nil {
		t.Fatal("a session without a record was listed")
	}
}
