package gitstore

import (
	"bytes"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
)

// FuzzDecodeRecord: a log record either decodes to what was encoded or is
// refused — never a panic, never a different batch.
func FuzzDecodeRecord(f *testing.F) {
	b := &batch{
		updates: []refUpdate{{name: "refs/heads/sessions/x/main", new: hashObject(typeCommit, []byte("c"))}},
		objects: []logObject{
			{id: hashObject(typeBlob, []byte("hello")), typ: typeBlob, data: []byte("hello")},
			{id: hashObject(typeBlob, []byte("help")), typ: typeBlob, base: hashObject(typeBlob, []byte("hello")), ed: delta.Diff([]byte("hello"), []byte("help"))},
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

// FuzzParseTreeAndCommit: decoders of objects read from a repository that
// anyone may have written must refuse garbage without panicking.
func FuzzParseTreeAndCommit(f *testing.F) {
	tr := &tree{}
	tr.set(treeEntry{name: "001.json", id: hashObject(typeBlob, []byte("a"))})
	tr.set(treeEntry{name: "branches", dir: true, id: hashObject(typeTree, nil)})
	f.Add(tr.encode())
	c := &commit{tree: hashObject(typeTree, nil), author: signature{"a", "a@b", time.Unix(0, 0)}, committer: signature{"a", "a@b", time.Unix(0, 0)}, message: "m\n"}
	f.Add(c.encode())
	// The property is that no input panics; what we write round-trips
	// (checked by the store tests).
	f.Fuzz(func(t *testing.T, p []byte) {
		parseTree(p)
		parseCommit(p)
		scanCommit(p)
		parseManifest(p)
		trailers(string(p))
	})
}
