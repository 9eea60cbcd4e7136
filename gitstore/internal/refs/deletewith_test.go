package refs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeleteWithKeepsPeeledLines: deleting one packed ref leaves every
// other line as it was, a tag's peeled line included (a remote may hold
// annotated tags), and drops the deleted ref's own peeled line.
func TestDeleteWithKeepsPeeledLines(t *testing.T) {
	dir := t.TempDir()
	const a, b, c = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222", "3333333333333333333333333333333333333333"
	packed := "# pack-refs with: peeled fully-peeled sorted \n" +
		a + " refs/heads/sessions/x/main\n" +
		b + " refs/tags/gone\n^" + a + "\n" +
		c + " refs/tags/kept\n^" + b + "\n"
	if err := os.WriteFile(filepath.Join(dir, "packed-refs"), []byte(packed), 0o644); err != nil {
		t.Fatal(err)
	}
	checked := 0
	pol := LockPolicy{Check: func() error { checked++; return nil }}
	if _, err := DeleteWith(dir, "refs/tags/gone", pol); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "packed-refs"))
	want := "# pack-refs with: peeled fully-peeled sorted \n" +
		a + " refs/heads/sessions/x/main\n" +
		c + " refs/tags/kept\n^" + b + "\n"
	if string(got) != want {
		t.Fatalf("packed-refs after the delete:\n%s\nwant:\n%s", got, want)
	}
	if checked != 1 {
		t.Fatalf("check ran %d times, want 1", checked)
	}
	// A failing check changes nothing.
	stop := errors.New("moved")
	if _, err := DeleteWith(dir, "refs/heads/sessions/x/main", LockPolicy{Check: func() error { return stop }}); !errors.Is(err, stop) {
		t.Fatalf("DeleteWith with a failing check: %v", err)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "packed-refs")); string(again) != want {
		t.Fatalf("a refused delete changed packed-refs:\n%s", again)
	}
	// A busy policy is asked about a held packed-refs.lock, and the
	// delete goes on once it is gone.
	lockPath := filepath.Join(dir, "packed-refs.lock")
	os.WriteFile(lockPath, nil, 0o644)
	asked := 0
	busy := func(l string) error { asked++; return os.Remove(l) }
	if _, err := DeleteWith(dir, "refs/heads/sessions/x/main", LockPolicy{Busy: busy}); err != nil {
		t.Fatal(err)
	}
	if asked != 1 {
		t.Fatalf("busy asked %d times, want 1", asked)
	}
	final, _ := os.ReadFile(filepath.Join(dir, "packed-refs"))
	if strings.Contains(string(final), "sessions/x/main") || !strings.Contains(string(final), "refs/tags/kept\n^"+b) {
		t.Fatalf("packed-refs at the end:\n%s", final)
	}
}
