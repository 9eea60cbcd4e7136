package gitstore

import (
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
