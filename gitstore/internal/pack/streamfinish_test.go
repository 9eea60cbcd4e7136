package pack

import (
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// TestStreamAddAfterFinish: a finished stream has let go of its offsets
// (a large push's biggest table), so a late Add is refused, not a panic or
// a corrupt pack.
func TestStreamAddAfterFinish(t *testing.T) {
	s, err := NewStream(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Discard()
	data := []byte("hello\n")
	id := object.HashObject(object.TypeBlob, data)
	if err := s.Add(id, object.TypeBlob, data, object.ZeroHash, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Finish(); err != nil {
		t.Fatal(err)
	}
	other := []byte("world\n")
	if err := s.Add(object.HashObject(object.TypeBlob, other), object.TypeBlob, other, object.ZeroHash, nil); err == nil {
		t.Fatal("Add after Finish was accepted")
	}
}
