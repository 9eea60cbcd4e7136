package testfixture_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/internal/testfixture"
	"github.com/thoughtbox/thoughtbox/ledger"
)

var update = flag.Bool("update", false, "rewrite testdata/ledger/small.fi from what the ledger and gitstore write now")

func intp(n int) *int { return &n }

// writeSmallLedger writes the small ledger into a new repository at gitDir
// with fixed ids and clocks, so that the same code writes the same bytes.
func writeSmallLedger(t *testing.T, gitDir string) {
	t.Helper()
	ids := []string{testfixture.CacheSession, testfixture.OpenSession}
	clock := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { clock = clock.Add(time.Minute); return clock }
	s, err := gitstore.Open(gitDir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(s, ledger.Options{Now: now, NewID: func() string { id := ids[0]; ids = ids[1:]; return id }})
	ctx := context.Background()
	alice, bob := ledger.Author{Name: "alice"}, ledger.Author{Name: "bob"}
	cache, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "Why the cache misses", Description: "Evictions climb after each deploy.", Tags: []string{"cache", "ops"}}, alice)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []ledger.ThoughtInput{
		{Thought: "The eviction counter climbs with every deploy.", NextThoughtNeeded: true},
		{Thought: "Suspect the TTL: it was halved last month.", NextThoughtNeeded: true},
		{Thought: "The warmup job runs right after each deploy.", NextThoughtNeeded: true},
		{Thought: "The TTL change predates the climb; not the cause.", NextThoughtNeeded: true, IsRevision: true, RevisesThought: intp(2)},
		{Thought: "Try: the warmup job loads cold keys and evicts hot ones.", NextThoughtNeeded: true, BranchID: "warmup", BranchFromThought: intp(3)},
		{Thought: "Its key list is a year old; most keys are gone.", NextThoughtNeeded: true, BranchID: "warmup"},
		{Thought: "Quarantine the warmup job and watch one deploy.", NextThoughtNeeded: false},
	} {
		if _, err := l.AddThought(ctx, cache.ID, in, alice); err != nil {
			t.Fatalf("%q: %v", in.Thought, err)
		}
	}
	open, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "Naming the release"}, bob)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"Names so far: Larch, Juniper.", "Juniper is taken by another project."} {
		if _, err := l.AddThought(ctx, open.ID, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, bob); err != nil {
			t.Fatal(err)
		}
	}
	k := ledger.NewKnowledge(s, ledger.KnowledgeOptions{Now: now})
	if _, err := k.CreatePattern(ctx, ledger.CreatePatternParams{ID: testfixture.PatternID, Title: "Check the warmup job",
		Description: "When evictions follow deploys, look at what runs after them.", Tags: []string{"cache"},
		Content: "Evictions that climb after each deploy point at what runs right after it.", DerivedFromSessions: []string{cache.ID}}, alice); err != nil {
		t.Fatal(err)
	}
	if _, err := k.WriteNote(ctx, ledger.WriteNoteParams{ID: testfixture.NoteID, Title: "To do", Content: "Ask ops for the key list's owner."}, bob); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// fastExport is the stream of the ledger's sessions and knowledge zone.
// refs/heads/main (the README commit, dated when the repository was
// made) is left out: a store opening the fixture writes its own.
func fastExport(t *testing.T, gitDir string) []byte {
	t.Helper()
	refs, err := exec.Command("git", "--git-dir", gitDir, "for-each-ref", "--format=%(refname)", "refs/heads/sessions", "refs/heads/knowledge").Output()
	if err != nil {
		t.Fatalf("git for-each-ref: %v", err)
	}
	args := append([]string{"--git-dir", gitDir, "fast-export", "--reencode=no"}, strings.Fields(string(refs))...)
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Fatalf("git fast-export: %v", err)
	}
	return out
}

// TestSmallLedgerIsCurrent writes the small ledger again and requires the
// same stream as testdata/ledger/small.fi: the layout, the commits and the
// file formats of a stored ledger are what older ledgers hold, so a change
// to them shows here first. -update rewrites the fixture.
func TestSmallLedgerIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	dir := filepath.Join(t.TempDir(), "small.git")
	writeSmallLedger(t, dir)
	got := fastExport(t, dir)
	if *update {
		if err := os.WriteFile(testfixture.SmallLedgerStream(), got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(testfixture.SmallLedgerStream())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the ledger written now differs from %s; if the change is meant, run\n\tgo test ./internal/testfixture -run TestSmallLedgerIsCurrent -update\n(got %d bytes, the fixture %d)", testfixture.SmallLedgerStream(), len(got), len(want))
	}
}

// TestSmallLedgerInstalls: SmallLedger makes a repository git accepts,
// holding both sessions and the knowledge zone.
func TestSmallLedgerInstalls(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.git")
	testfixture.SmallLedger(t, dir)
	if out, err := exec.Command("git", "--git-dir", dir, "fsck", "--strict", "--no-progress").CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	out, err := exec.Command("git", "--git-dir", dir, "for-each-ref", "--format=%(refname)").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{
		"refs/heads/knowledge",
		"refs/heads/sessions/" + testfixture.CacheSession + "/main",
		"refs/heads/sessions/" + testfixture.CacheSession + "/branches/warmup",
		"refs/heads/sessions/" + testfixture.OpenSession + "/main",
	} {
		if !strings.Contains(string(out), ref+"\n") {
			t.Errorf("the installed fixture lacks %s; it has:\n%s", ref, out)
		}
	}
}
