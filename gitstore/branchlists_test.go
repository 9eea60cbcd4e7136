package gitstore

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// mainBranchFiles reads the branch lists main's manifest holds at tip.
func mainBranchFiles(t *testing.T, s *Store, id string, tip ledger.CommitID) map[string][]string {
	t.Helper()
	h, err := object.ParseHash(string(tip))
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.readChain(h, id, "")
	if err != nil {
		t.Fatal(err)
	}
	return st.Manifest().BranchFiles
}

// Main's manifest lists every branch's files (seed 003), though the
// listing of a session's branches serves several writes of main: a branch
// this store writes shows at main's next write, and so does one another
// process writes under the session's lock; one moved without that lock
// shows once the listing is branchListsFor old.
func TestMainManifestListsBranches(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "p.git")
	a, err := Open(dir, Options{FlushInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const id = "a1b2c3d4-0000-4000-8000-0000000000b1"
	w := newSession(t, a, id)
	// locked writes as the ledger makes them: under the session's lock.
	locked := func(w *writer, branch string, td ledger.ThoughtData) ledger.CommitID {
		unlock, err := w.s.LockSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		return w.add(branch, td, "")
	}
	step := func(branch string, n int) ledger.CommitID {
		td := ledger.ThoughtData{Thought: "step", ThoughtNumber: n, NextThoughtNeeded: true}
		if branch != "" {
			td.BranchFromThought, td.BranchID = intp(1), branch
		}
		return locked(w, branch, td)
	}
	lists := func(tip ledger.CommitID) map[string][]string { return mainBranchFiles(t, a, id, tip) }
	first := step("", 1)
	if got := lists(first); len(got) != 0 {
		t.Fatalf("no branch yet, main lists %v", got)
	}
	w.tips["fork:alt"] = first
	step("alt", 2)
	if got := lists(step("", 2))["alt"]; !slices.Equal(got, []string{"002.json"}) {
		t.Fatalf("main lists alt as %v right after alt's first thought, want [002.json]", got)
	}
	step("alt", 3)
	if got := lists(step("", 3))["alt"]; !slices.Equal(got, []string{"002.json", "003.json"}) {
		t.Fatalf("main lists alt as %v after alt's second thought, want [002.json 003.json]", got)
	}

	// Another process: a second store on the same repository.
	b, err := Open(dir, Options{FlushInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wb := &writer{t: t, s: b, meta: w.meta, tips: map[string]ledger.CommitID{"fork:other": first, "fork:loose": first}, at: w.at}
	locked(wb, "other", ledger.ThoughtData{Thought: "elsewhere", ThoughtNumber: 2, BranchFromThought: intp(1), BranchID: "other", NextThoughtNeeded: true})
	w.at = wb.at
	if got := lists(step("", 4)); !slices.Equal(got["other"], []string{"002.json"}) || len(got["alt"]) != 2 {
		t.Fatalf("main lists %v after another process wrote branch other under the lock, want alt's two files and other's one", got)
	}
	wb.at = w.at
	wb.add("loose", ledger.ThoughtData{Thought: "unlocked", ThoughtNumber: 2, BranchFromThought: intp(1), BranchID: "loose", NextThoughtNeeded: true}, "")
	w.at = wb.at
	time.Sleep(branchListsFor)
	if got := lists(step("", 5)); !slices.Equal(got["loose"], []string{"002.json"}) || len(got) != 3 {
		t.Fatalf("main lists %v once the listing is %v old, want alt, other and loose", got, branchListsFor)
	}
}
