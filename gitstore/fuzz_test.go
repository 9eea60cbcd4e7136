package gitstore

import (
	"bytes"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// FuzzDecodeRecord: a log record either decodes to what was encoded or is
// refused — never a panic, never a different batch.
func FuzzDecodeRecord(f *testing.F) {
	b := &batch{
		updates: []refUpdate{{name: "refs/heads/sessions/x/main", new: object.HashObject(typeCommit, []byte("c"))}},
		objects: []logObject{
			{id: object.HashObject(typeBlob, []byte("hello")), typ: typeBlob, data: []byte("hello")},
			{id: object.HashObject(typeBlob, []byte("help")), typ: typeBlob, base: object.HashObject(typeBlob, []byte("hello")), ed: delta.Diff([]byte("hello"), []byte("help"))},
		},
	}
	f.Add(encodeRecord(nil, b))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 7})
	f.Fuzz(func(t *testing.T, p []byte) {
		rec, n, err := decodeRecord(p)
		if err != nil {
			return
		}
		if n > len(p) {
			t.Fatalf("consumed %d of %d bytes", n, len(p))
		}
		if again := encodeRecord(nil, rec); !bytes.Equal(again, p[:n]) {
			t.Fatalf("re-encoding a decoded record changed it")
		}
	})
}

// FuzzParseStoredText: the store's own decoders of text read from a
// repository that anyone may have written must refuse garbage without
// panicking (the object decoders have theirs in internal/object).
func FuzzParseStoredText(f *testing.F) {
	c := &object.Commit{Tree: object.HashObject(typeTree, nil), Author: object.Signature{Name: "a", Email: "a@b", When: time.Unix(0, 0)}, Committer: object.Signature{Name: "a", Email: "a@b", When: time.Unix(0, 0)}, Message: "m\n\nThoughtbox-Session: s\n"}
	f.Add(c.Encode())
	f.Fuzz(func(t *testing.T, p []byte) {
		scanCommit(p)
		parseManifest(p)
		trailers(string(p))
	})
}
