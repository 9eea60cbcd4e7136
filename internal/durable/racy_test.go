package durable

import (
	"testing"
	"time"
)

func TestRacy(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 10, 0, time.UTC)
	for _, c := range []struct {
		name  string
		mtime time.Time
		want  bool
	}{
		{"a whole second, one second ago", now.Add(-time.Second), true},
		{"a whole second, two seconds ago (FAT)", now.Add(-2 * time.Second), true},
		{"a whole millisecond, just now", now.Add(-7 * time.Millisecond), true},
		{"a whole second, older than the window", now.Add(-RacyWindow), false},
		{"nanoseconds, just now", now.Add(-123456789 * time.Nanosecond), false},
		{"a whole second in the future (a skewed clock)", now.Add(time.Hour), true},
	} {
		if got := Racy(c.mtime, now); got != c.want {
			t.Errorf("%s: Racy = %v, want %v", c.name, got, c.want)
		}
	}
}
