package pack

import (
	"bytes"
	"compress/zlib"
	"io"
	"testing"
)

// TestWriteStored checks the hand-written stored zlib streams of small
// pack entries: zlib inflates them, and storedPayload slices them.
func TestWriteStored(t *testing.T) {
	var scratch []byte
	for _, n := range []int{0, 1, 2047, 65535, 65536, 200000} {
		p := bytes.Repeat([]byte("abcdefg"), n/7+1)[:n]
		var buf bytes.Buffer
		if err := WriteStored(&buf, p, &scratch); err != nil {
			t.Fatal(err)
		}
		zr, err := zlib.NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, p) {
			t.Fatalf("%d bytes: inflated to %d bytes, %v", n, len(got), err)
		}
		if n <= 0xffff {
			data, ok := StoredPayload(buf.Bytes(), n)
			if !ok || !bytes.Equal(data, p) {
				t.Fatalf("%d bytes: storedPayload did not slice it out", n)
			}
		}
	}
}
