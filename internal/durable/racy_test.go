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
		{"a whole millisecond, 700 ms ago", now.Add(-700 * time.Millisecond), true},
		{"a whole second, older than the window", now.Add(-RacyWindow), false},
		{"nanoseconds, within a tick", now.Add(-(20*time.Millisecond + 123)), true},
		{"nanoseconds, older than a tick", now.Add(-(123456789 * time.Nanosecond)), false},
		{"nanoseconds, a minute old", now.Add(-(time.Minute + 123)), false},
		{"a second ahead of the clock", now.Add(time.Second), true},
		{"nanoseconds, a second ahead", now.Add(time.Second + 123), true},
		{"an hour ahead (a skewed clock): not racy for good", now.Add(time.Hour + 123), false},
	} {
		if got := Racy(c.mtime, now); got != c.want {
			t.Errorf("%s: Racy = %v, want %v", c.name, got, c.want)
		}
	}
	if !Coarse(now) || !Coarse(now.Add(7*time.Millisecond)) || Coarse(now.Add(7*time.Millisecond+1)) {
		t.Error("Coarse: a whole millisecond is coarse, one nanosecond past it is not")
	}
}
