package cli

import (
	"bytes"
	"os"
	"testing"
)

// TestIsTerminalRefusesNonTerminals: the null device is a character
// device but no terminal, and output sent to it or to a pipe or a buffer
// gets no colour and no progress line.
func TestIsTerminalRefusesNonTerminals(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null) {
		t.Errorf("isTerminal(%s) = true", os.DevNull)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if isTerminal(w) {
		t.Error("isTerminal(a pipe) = true")
	}
	if isTerminal(&bytes.Buffer{}) {
		t.Error("isTerminal(a buffer) = true")
	}
	closed, err := os.CreateTemp(t.TempDir(), "closed")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if isTerminal(closed) {
		t.Error("isTerminal(a closed file) = true")
	}
}
