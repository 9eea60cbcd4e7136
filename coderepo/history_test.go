package coderepo

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseBlame groups porcelain lines into runs by commit: a commit's
// header fields appear once, and a commit that comes back after another
// starts a new run.
func TestParseBlame(t *testing.T) {
	a, b := "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	out := a + " 1 1 2\nauthor Dev\nsummary first\nfilename f\n\tone\n" +
		a + " 2 2\n\ttwo\n" +
		b + " 3 3 1\nauthor Dev\nsummary second\nfilename f\n\tthree\n" +
		a + " 4 4 1\n\tfour\n"
	got, err := parseBlame(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []BlameRange{{From: 1, To: 2, Commit: a}, {From: 3, To: 3, Commit: b}, {From: 4, To: 4, Commit: a}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := parseBlame("not porcelain\n"); err == nil {
		t.Error("a line that is no header was accepted")
	}
}
