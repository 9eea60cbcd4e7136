package gitstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/thoughtbox/thoughtbox/internal/testfixture"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestSmallLedgerFixture opens the shared small ledger (testdata/ledger,
// a repository as plain Git holds it, without our log) and reads it back
// whole: both sessions, the branch, the revision, the closing thought,
// the knowledge zone, and a clean verify of each session.
func TestSmallLedgerFixture(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.git")
	testfixture.SmallLedger(t, dir)
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	l := ledger.New(s, ledger.Options{})
	list, err := l.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("sessions of the fixture: %+v, %v", list, err)
	}
	v, err := l.Load(ctx, testfixture.CacheSession)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Integrity.Valid || v.Graph.Len() != 7 || !v.Graph.Completed() {
		t.Errorf("%s: valid %v, %d thoughts, completed %v; want valid, 7, completed", testfixture.CacheSession, v.Integrity.Valid, v.Graph.Len(), v.Graph.Completed())
	}
	if b := v.Graph.Branches(); len(b) != 1 || b[0].ID != "warmup" {
		t.Errorf("branches: %+v, want warmup", b)
	}
	for _, id := range []string{testfixture.CacheSession, testfixture.OpenSession} {
		res, err := l.Verify(ctx, id, ledger.VerifyOptions{})
		if err != nil || !res.Valid {
			t.Errorf("verify %s: %+v, %v", id, res, err)
		}
	}
	p, err := ledger.NewKnowledge(s, ledger.KnowledgeOptions{}).Pattern(ctx, testfixture.PatternID)
	if err != nil || len(p.DerivedFromSessions) != 1 || p.DerivedFromSessions[0] != testfixture.CacheSession {
		t.Errorf("pattern %s: %+v, %v", testfixture.PatternID, p, err)
	}
}
