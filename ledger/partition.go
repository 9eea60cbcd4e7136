package ledger

import (
	"fmt"
	"time"
)

// Granularity is how session folders are grouped by creation time (seed
// 002's sessionPartitionGranularity). It lives in the domain, not in a
// store, because the configuration names it and every store must place a
// session by the same rule; the store only applies it (PartitionPath).
type Granularity string

// The partition granularities of seed 002.
const (
	PartitionMonthly Granularity = "monthly"
	PartitionWeekly  Granularity = "weekly"
	PartitionDaily   Granularity = "daily"
	PartitionNone    Granularity = "none"
)

// ParseGranularity validates a granularity name; "" means monthly, the
// seed's default.
func ParseGranularity(s string) (Granularity, error) {
	switch g := Granularity(s); g {
	case PartitionMonthly, PartitionWeekly, PartitionDaily, PartitionNone:
		return g, nil
	case "":
		return PartitionMonthly, nil
	}
	return "", fmt.Errorf("partition granularity %q: expected monthly, weekly, daily or none", s)
}

// Partition names the folder a session created at t goes in ("" for
// none). Times are taken in UTC, so a session's folder does not depend on
// the zone of the process that created it.
func (g Granularity) Partition(t time.Time) string {
	t = t.UTC()
	switch g {
	case PartitionWeekly:
		y, w := t.ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w)
	case PartitionDaily:
		return t.Format("2006-01-02")
	case PartitionNone:
		return ""
	}
	return t.Format("2006-01")
}
