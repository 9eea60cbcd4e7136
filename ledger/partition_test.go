package ledger

import (
	"testing"
	"time"
)

func TestParseGranularity(t *testing.T) {
	for in, want := range map[string]Granularity{
		"": PartitionMonthly, "monthly": PartitionMonthly, "weekly": PartitionWeekly,
		"daily": PartitionDaily, "none": PartitionNone,
	} {
		if g, err := ParseGranularity(in); err != nil || g != want {
			t.Errorf("ParseGranularity(%q) = %q, %v; want %q", in, g, err, want)
		}
	}
	for _, bad := range []string{"Monthly", "hourly", " none"} {
		if g, err := ParseGranularity(bad); err == nil {
			t.Errorf("ParseGranularity(%q) = %q, want an error", bad, g)
		}
	}
}

// TestGranularityPartition: folder names by granularity, computed in UTC
// (late on 31 December in New York is already January in UTC) and with
// ISO weeks (1 January 2027 belongs to 2026's week 53).
func TestGranularityPartition(t *testing.T) {
	ny := time.FixedZone("EST", -5*3600)
	late := time.Date(2026, 12, 31, 22, 0, 0, 0, ny)
	newYear := time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		g    Granularity
		at   time.Time
		want string
	}{
		{PartitionMonthly, late, "2027-01"},
		{"", late, "2027-01"},
		{PartitionDaily, late, "2027-01-01"},
		{PartitionWeekly, newYear, "2026-W53"},
		{PartitionWeekly, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), "2026-W10"},
		{PartitionNone, late, ""},
	} {
		if got := c.g.Partition(c.at); got != c.want {
			t.Errorf("%q.Partition(%v) = %q, want %q", c.g, c.at, got, c.want)
		}
	}
}
