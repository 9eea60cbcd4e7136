package delta

import (
	"bytes"
	"runtime"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

func TestDeltaRoundTrip(t *testing.T) {
	cases := [][2]string{
		{"", "abc"},
		{"abc", ""},
		{"hello world", "hello brave world"},
		{"hello brave world", "hello world"},
		{strings.Repeat("x", 200000), strings.Repeat("x", 100000) + "yy" + strings.Repeat("x", 100001)},
		{"same", "same"},
		// an entry inserted mid-tree and a hash changed at the end, as when
		// thought 1000.json lands between 100.json and 101.json
		{strings.Repeat("0123456789abcdef", 4000) + "OLDHASH", strings.Repeat("0123456789abcdef", 1000) + "NEW ENTRY" + strings.Repeat("0123456789abcdef", 3000) + "NEWHASH!"},
		{strings.Repeat("0123456789abcdef", 1000) + "NEW ENTRY" + strings.Repeat("0123456789abcdef", 3000) + "NEWHASH!", strings.Repeat("0123456789abcdef", 4000) + "OLDHASH"},
	}
	for _, c := range cases {
		base, target := []byte(c[0]), []byte(c[1])
		e := Diff(base, target)
		got, err := e.Apply(base)
		if err != nil || !bytes.Equal(got, target) {
			t.Fatalf("apply(%q→%q) = %q, %v", c[0], c[1], got, err)
		}
		if len(target) > 10000 && e.Inserted() > 64 {
			t.Errorf("edit of a %d-byte object inserts %d bytes; want a small delta", len(target), e.Inserted())
		}
		if len(base) == 0 || len(target) == 0 {
			continue // the flusher never writes deltas for empty objects
		}
		patched, err := packfile.PatchDelta(base, e.GitDelta(len(base)))
		if err != nil || !bytes.Equal(patched, target) {
			t.Fatalf("git delta (%d→%d bytes): got %d bytes, %v", len(base), len(target), len(patched), err)
		}
		// our own patcher must agree with go-git's
		if ours, err := Patch(base, e.GitDelta(len(base))); err != nil || !bytes.Equal(ours, target) {
			t.Fatalf("Patch (%d→%d bytes): got %d bytes, %v", len(base), len(target), len(ours), err)
		}
	}
}

// TestApplyRefusesCopyPastBase: an edit read from a damaged log must fail,
// not slice out of range.
func TestApplyRefusesCopyPastBase(t *testing.T) {
	e := Edit{Ops: []Op{{Off: 2, N: 5}}}
	if _, err := e.Apply([]byte("abc")); err == nil {
		t.Fatal("an edit copying past its base applied")
	}
}

// TestApplyIntoReusesBuffer: the flusher builds each version in the buffer
// of one already packed; the result must not depend on what it held.
func TestApplyIntoReusesBuffer(t *testing.T) {
	base, target := []byte("hello brave new world"), []byte("hello new world!")
	e := Diff(base, target)
	dst := bytes.Repeat([]byte{'x'}, 4096)
	got, err := e.ApplyInto(dst, base)
	if err != nil || !bytes.Equal(got, target) {
		t.Fatalf("ApplyInto = %q, %v", got, err)
	}
	if &got[0] != &dst[0] {
		t.Error("ApplyInto allocated although dst was large enough")
	}
	if n := e.TargetLen(); n != len(target) {
		t.Errorf("TargetLen = %d, want %d", n, len(target))
	}
}

// TestDetachedOwnsItsBytes: a detached edit survives its target being
// overwritten, which the store does with reused buffers.
func TestDetachedOwnsItsBytes(t *testing.T) {
	base := []byte(strings.Repeat("a", 100))
	target := []byte(strings.Repeat("a", 50) + "INSERTED" + strings.Repeat("a", 50))
	d := Diff(base, target).Detached()
	for i := range target {
		target[i] = 'z'
	}
	got, err := d.Apply(base)
	if err != nil || string(got) != strings.Repeat("a", 50)+"INSERTED"+strings.Repeat("a", 50) {
		t.Fatalf("detached edit rebuilt %q, %v", got, err)
	}
}

// TestGitDeltaLongCopy: copies longer than 64 KiB are split into pieces
// every Git reader accepts, and long insertions into 127-byte runs.
func TestGitDeltaLongCopy(t *testing.T) {
	base := bytes.Repeat([]byte("0123456789"), 30000)
	target := append(append([]byte(nil), base[:150000]...), bytes.Repeat([]byte{'!'}, 1000)...)
	target = append(target, base[150000:]...)
	d := Diff(base, target).GitDelta(len(base))
	for _, patch := range []func([]byte, []byte) ([]byte, error){Patch, packfile.PatchDelta} {
		got, err := patch(base, d)
		if err != nil || !bytes.Equal(got, target) {
			t.Fatalf("patch: %d bytes, %v", len(got), err)
		}
	}
}

// TestPatchRefusesBadDeltas names each way a delta from outside can be
// wrong.
func TestPatchRefusesBadDeltas(t *testing.T) {
	base := []byte("abcdef")
	for name, d := range map[string][]byte{
		"wrong base size":   {5, 3, 0x90, 3},
		"no target size":    {6},
		"truncated copy":    {6, 3, 0x91},
		"copy out of range": {6, 3, 0x91, 5, 3},
		"truncated insert":  {6, 3, 3, 'a'},
		"reserved 0":        {6, 3, 0},
		"short result":      {6, 3, 1, 'a'},
		"insert past size":  {6, 1, 2, 'a', 'b'},
	} {
		if _, err := Patch(base, d); err == nil {
			t.Errorf("%s: Patch accepted %x", name, d)
		}
	}
}

// FuzzPatchDelta: a delta that applies must agree with the edit it came
// from, and garbage must be refused without panicking.
func FuzzPatchDelta(f *testing.F) {
	f.Add([]byte("the quick brown fox"), []byte("the quick red fox jumps"))
	f.Add([]byte{}, []byte("x"))
	f.Fuzz(func(t *testing.T, base, target []byte) {
		e := Diff(base, target)
		got, err := e.Apply(base)
		if err != nil || !bytes.Equal(got, target) {
			t.Fatalf("edit round trip failed: %v", err)
		}
		if len(base) > 0 {
			if got, err := Patch(base, e.GitDelta(len(base))); err != nil || !bytes.Equal(got, target) {
				t.Fatalf("git delta round trip failed: %v", err)
			}
		}
		Patch(base, target) // arbitrary bytes as a delta: must not panic
	})
}

// TestPatchDoesNotTrustTheDeclaredSize: a delta of a few bytes that
// declares a target of gigabytes is refused without reserving them, and a
// real delta whose target is larger than its base and itself (a copy
// repeated) still applies.
func TestPatchDoesNotTrustTheDeclaredSize(t *testing.T) {
	base := []byte("0123456789")
	// base size 10, target size 3 GiB, one copy of the whole base.
	hostile := []byte{10, 0x80, 0x80, 0x80, 0x80, 0x0c, 0x91, 0, 10}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := Patch(base, hostile); err == nil {
		t.Fatal("a delta that makes 10 bytes of a declared 3 GiB was applied")
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("refusing the delta allocated %d bytes", grew)
	}
	// Target 40: the base copied four times, from a 10-byte base and a
	// 14-byte delta.
	repeat := []byte{10, 40, 0x91, 0, 10, 0x91, 0, 10, 0x91, 0, 10, 0x91, 0, 10}
	got, err := Patch(base, repeat)
	if err != nil || string(got) != strings.Repeat(string(base), 4) {
		t.Fatalf("repeating delta: %q, %v", got, err)
	}
}
