package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestShortIDs(t *testing.T) {
	all := []string{
		"c0ffee00-0000-4000-8000-000000000001",
		"C0FFEE00-0000-4000-8000-000000000002", // differs at the end, in case too
		"c0ffee01-0000-4000-8000-000000000003",
		"deadbeef-0000-4000-8000-000000000004",
		"short",
	}
	got := shortIDs(all, all)
	want := map[string]string{
		"c0ffee00-0000-4000-8000-000000000001": "c0ffee00-0000-4000-8000-000000000001",
		"C0FFEE00-0000-4000-8000-000000000002": "C0FFEE00-0000-4000-8000-000000000002",
		"c0ffee01-0000-4000-8000-000000000003": "c0ffee01",
		"deadbeef-0000-4000-8000-000000000004": "deadbeef",
		"short":                                "short",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shortIDs (-want +got):\n%s", diff)
	}
}
