package pack

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// TestCompressorKeptBetweenPacks: the compressor a pack was written with
// is kept for the next pack, whose objects git reads back intact, and
// ReleaseIdle drops it. Objects of 2 kB and more are compressed; the
// rest are stored, so each pack here has both.
func TestCompressorKeptBetweenPacks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "--bare", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	kept := func() bool {
		freePackBuffers.Lock()
		defer freePackBuffers.Unlock()
		return len(freePackBuffers.free) > 0 && freePackBuffers.free[0].fast != nil
	}
	ReleaseIdle()
	var all []Object
	for p := range 3 {
		var objs []Object
		for i := range 20 {
			var b bytes.Buffer
			for j := 0; j < 40*i; j++ {
				fmt.Fprintf(&b, "pack %d, object %d, line %d\n", p, i, j)
			}
			data := b.Bytes()
			objs = append(objs, Object{ID: object.HashObject(object.TypeBlob, data), Type: object.TypeBlob, Data: data, Base: -1})
		}
		name, err := Write(filepath.Join(dir, "objects", "pack"), objs)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("git", "-C", dir, "verify-pack", filepath.Join(dir, "objects", "pack", "pack-"+name.String()+".idx")).CombinedOutput(); err != nil {
			t.Fatalf("verify-pack of pack %d: %v\n%s", p, err, out)
		}
		if !kept() {
			t.Fatalf("after pack %d the compressor was not kept", p)
		}
		all = append(all, objs...)
	}
	for _, o := range all {
		got, err := exec.Command("git", "-C", dir, "cat-file", "blob", o.ID.String()).Output()
		if err != nil {
			t.Fatalf("cat-file %s: %v", o.ID, err)
		}
		if !bytes.Equal(got, o.Data) {
			t.Fatalf("object %s differs", o.ID)
		}
	}
	ReleaseIdle()
	if kept() {
		t.Fatal("ReleaseIdle kept the compressor")
	}
}
