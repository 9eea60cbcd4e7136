package gitstore

import (
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

// Main's manifest lists every branch's files (seed 003). A branch this
// store writes shows at main's next write, however recent the listing it
// keeps; one another process writes shows once that listing is
// branchListsFor old.
func TestMainManifestListsBranches(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.git")
	a, err := Open(dir, Options{FlushInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const id = "a1b2c3d4-0000-4000-8000-0000000000b1"
	w := newSession(t, a, id)
	step := func(branch string, n int) ledger.CommitID {
		td := ledger.ThoughtData{Thought: "step", ThoughtNumber: n, NextThoughtNeeded: true}
		if branch != "" {
			td.BranchFromThought, td.BranchID = intp(1), branch
		}
		return w.add(branch, td, "")
	}
	first := step("", 1)
	if got := mainBranchFiles(t, a, id, first); len(got) != 0 {
		t.Fatalf("no branch yet, main lists %v", got)
	}
	w.tips["fork:alt"] = first
	step("alt", 2)
	tip := step("", 2)
	if got := mainBranchFiles(t, a, id, tip)["alt"]; !slices.Equal(got, []string{"002.json"}) {
		t.Fatalf("main lists alt as %v right after alt's first thought, want [002.json]", got)
	}
	step("alt", 3)
	tip = step("", 3)
	if got := mainBranchFiles(t, a, id, tip)["alt"]; !slices.Equal(got, []string{"002.json", "003.json"}) {
		t.Fatalf("main lists alt as %v after alt's second thought, want [002.json 003.json]", got)
	}

	// Another process: a second store on the same repository.
	b, err := Open(dir, Options{FlushInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wb := &writer{t: t, s: b, meta: w.meta, tips: map[string]ledger.CommitID{"fork:other": first}, at: w.at}
	wb.add("other", ledger.ThoughtData{Thought: "elsewhere", ThoughtNumber: 2, BranchFromThought: intp(1), BranchID: "other", NextThoughtNeeded: true}, "")
	w.at = wb.at
	time.Sleep(branchListsFor)
	tip = step("", 4)
	got := mainBranchFiles(t, a, id, tip)
	if !slices.Equal(got["other"], []string{"002.json"}) || len(got["alt"]) != 2 {
		t.Fatalf("main lists %v once the listing is %v old, want alt's two files and other's one", got, branchListsFor)
	}
}
