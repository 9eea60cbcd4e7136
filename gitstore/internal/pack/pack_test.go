package pack

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

func TestWritePackReadByGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git CLI not installed")
	}
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "--bare", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	var objs []Object
	var prev []byte
	for i := 0; i < 120; i++ {
		var b bytes.Buffer
		for j := 0; j <= i; j++ {
			fmt.Fprintf(&b, "line %d of version %d\n", j, j)
		}
		data := b.Bytes()
		o := Object{ID: object.HashObject(object.TypeBlob, data), Type: object.TypeBlob, Data: data, Base: -1}
		if prev != nil && i%50 != 0 {
			// reverse order is what the flusher does; here test forward deltas
			o.Base = len(objs) - 1
			o.Delta = delta.Diff(prev, data).GitDelta(len(prev))
		}
		objs = append(objs, o)
		prev = data
	}
	name, err := Write(filepath.Join(dir, "objects", "pack"), objs)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", dir, "verify-pack", "-v", filepath.Join(dir, "objects", "pack", "pack-"+name.String()+".idx")).CombinedOutput()
	if err != nil {
		t.Fatalf("verify-pack: %v\n%s", err, out)
	}
	for _, o := range objs {
		got, err := exec.Command("git", "-C", dir, "cat-file", "blob", o.ID.String()).Output()
		if err != nil {
			t.Fatalf("cat-file %s: %v", o.ID, err)
		}
		want := o.Data
		if !bytes.Equal(got, want) {
			t.Fatalf("object %s differs", o.ID)
		}
	}
}

// TestStoredPayload checks the no-inflate path against real zlib streams:
// stored streams are sliced, anything else is left to the inflater.
func TestStoredPayload(t *testing.T) {
	for _, level := range []int{zlib.NoCompression, zlib.BestSpeed} {
		for _, n := range []int{0, 1, 500, 2047} {
			data := bytes.Repeat([]byte("thought "), n/8+1)[:n]
			var b bytes.Buffer
			w, _ := zlib.NewWriterLevel(&b, level)
			w.Write(data)
			w.Close()
			got, ok := StoredPayload(b.Bytes(), n)
			if level == zlib.NoCompression && (!ok || !bytes.Equal(got, data)) {
				t.Errorf("stored %d bytes: ok=%v, equal=%v", n, ok, bytes.Equal(got, data))
			}
			if level != zlib.NoCompression && ok && n > 16 {
				t.Errorf("compressed %d bytes taken for stored", n)
			}
			if ok {
				bad := append([]byte(nil), b.Bytes()...)
				bad[len(bad)-1] ^= 1
				if _, ok := StoredPayload(bad, n); ok {
					t.Errorf("a stored stream with a wrong checksum was accepted")
				}
			}
		}
	}
}
