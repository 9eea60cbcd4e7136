package gitstore

import (
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// FuzzParseStoredText: the store's own decoders of text read from a
// repository that anyone may have written must refuse garbage without
// panicking (the object decoders have theirs in internal/object, the manifest's
// in internal/manifest).
func FuzzParseStoredText(f *testing.F) {
	c := &object.Commit{Tree: object.HashObject(typeTree, nil), Author: object.Signature{Name: "a", Email: "a@b", When: time.Unix(0, 0)}, Committer: object.Signature{Name: "a", Email: "a@b", When: time.Unix(0, 0)}, Message: "m\n\nThoughtbox-Session: s\n"}
	f.Add(c.Encode())
	f.Fuzz(func(t *testing.T, p []byte) {
		scanCommit(p)
		trailers(string(p))
	})
}
