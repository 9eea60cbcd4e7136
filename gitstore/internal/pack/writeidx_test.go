package pack

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestWriteIndexIsGits: the index Write and Merge produce is, byte for
// byte, the one git index-pack makes of the same pack.
func TestWriteIndexIsGits(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	dir := t.TempDir()
	recs, heads := sessionsFlush(5, 20, 29)
	lay, err := Plan(recs, heads, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Plan(logged(0, 40), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, objs := range [][]Object{lay.Objects, second.Objects} {
		if _, err := Write(dir, objs); err != nil {
			t.Fatal(err)
		}
	}
	check := func() {
		packs, _ := filepath.Glob(filepath.Join(dir, "*.pack"))
		for _, p := range packs {
			ours, err := os.ReadFile(p[:len(p)-len(".pack")] + ".idx")
			if err != nil {
				t.Fatal(err)
			}
			theirs := filepath.Join(t.TempDir(), "git.idx")
			if out, err := exec.Command("git", "index-pack", "-o", theirs, p).CombinedOutput(); err != nil {
				t.Fatalf("git index-pack: %v\n%s", err, out)
			}
			want, _ := os.ReadFile(theirs)
			if !bytes.Equal(ours, want) {
				t.Fatalf("%s: our index (%d bytes) differs from git's (%d bytes)", filepath.Base(p), len(ours), len(want))
			}
		}
	}
	check()
	ps := NewSet(dir)
	defer ps.Close()
	if err := ps.Refresh(); err != nil {
		t.Fatal(err)
	}
	if err := Merge(dir, t.TempDir(), ps.Packs(), ps.Read); err != nil {
		t.Fatal(err)
	}
	check()
}
