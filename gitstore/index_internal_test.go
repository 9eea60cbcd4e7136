package gitstore

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestIndexSummaryConversion: a ledger summary with every field set comes
// back whole from the index's own record type. The check that every field
// is set makes a field added to ledger.SessionSummary or SessionMeta fail
// here until the conversion carries it (else listings from the index would
// silently drop it).
func TestIndexSummaryConversion(t *testing.T) {
	in := ledger.SessionSummary{
		Meta: ledger.SessionMeta{
			ID: "s1", Title: "Title", Description: "Description", Tags: []string{"a", "b"},
			PartitionPath: "2026-11", CreatedAt: time.Date(2026, 11, 1, 2, 3, 4, 5, time.UTC),
			UpdatedAt: time.Date(2026, 11, 24, 15, 0, 0, 6, time.UTC),
		},
		ThoughtCount: 12, BranchCount: 3,
	}
	requireEveryField(t, reflect.ValueOf(in), "SessionSummary")
	out := fromIndexSummary(in.Meta.ID, toIndexSummary(in))
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("through the index:\n in %+v\nout %+v", in, out)
	}
}

func requireEveryField(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	for i := range v.NumField() {
		f, name := v.Field(i), path+"."+v.Type().Field(i).Name
		if f.Kind() == reflect.Struct && f.Type() != reflect.TypeOf(time.Time{}) {
			requireEveryField(t, f, name)
			continue
		}
		if f.IsZero() {
			t.Fatalf("%s is not set: set it here and carry it in toIndexSummary and fromIndexSummary", name)
		}
	}
}

// TestLoadedSummaryIsTheListingsSummary: the summary the index takes from
// a session read whole for its words equals the one a listing reads from
// the manifests (branches, revisions, edited metadata, a branch written
// after main), on both storages.
func TestLoadedSummaryIsTheListingsSummary(t *testing.T) {
	mem, err := OpenMemory(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	disk, err := Open(filepath.Join(t.TempDir(), "p.git"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer disk.Close()
	for _, s := range []*Store{mem, disk} {
		l := ledger.New(s, ledger.Options{})
		ctx := context.Background()
		who := ledger.Author{Name: "t"}
		one, two := 1, 2
		for i := range 3 {
			ss, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "s", Tags: []string{"a"}}, who)
			if err != nil {
				t.Fatal(err)
			}
			ins := []ledger.ThoughtInput{{Thought: "one"}, {Thought: "two"}, {Thought: "three", IsRevision: true, RevisesThought: &one}}
			if i > 0 {
				ins = append(ins, ledger.ThoughtInput{Thought: "b1", BranchID: "alt", BranchFromThought: &two},
					ledger.ThoughtInput{Thought: "four"}, ledger.ThoughtInput{Thought: "b2", BranchID: "alt"})
			}
			if i > 1 {
				ins = append(ins, ledger.ThoughtInput{Thought: "c1", BranchID: "other", BranchFromThought: &one})
			}
			for _, in := range ins {
				in.NextThoughtNeeded = true
				if _, err := l.AddThought(ctx, ss.ID, in, who); err != nil {
					t.Fatal(err)
				}
			}
			if i == 2 {
				title := "renamed"
				if _, err := l.UpdateSession(ctx, ss.ID, ledger.UpdateSessionParams{Title: &title}, who); err != nil {
					t.Fatal(err)
				}
			}
		}
		now, _, err := s.sessionsNow()
		if err != nil || len(now) != 3 {
			t.Fatalf("%d sessions, %v", len(now), err)
		}
		for _, n := range now {
			want, err := s.summary(n.id, n.refs)
			if err != nil {
				t.Fatal(err)
			}
			refs := map[string]hash{s.lay.mainRef(n.id): n.refs.main}
			for _, b := range n.refs.branches {
				refs[s.lay.branchRef(n.id, b.name)] = b.tip
			}
			ss, err := s.loadSessionAt(n.id, refs)
			if err != nil {
				t.Fatal(err)
			}
			got, whole := loadedSummary(ss, len(n.refs.branches))
			if !whole || !reflect.DeepEqual(got, want) {
				t.Errorf("session %s: loaded %+v (whole %v), listed %+v", n.id, got, whole, want)
			}
		}
	}
}
