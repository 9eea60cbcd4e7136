package gitstore

import (
	"encoding/json"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestThoughtFileAsEncodingJSON checks that the hand-written thought file
// is byte for byte what encoding/json writes (MarshalIndent), for fixed
// edge cases and random thoughts, and that the thoughts it leaves to
// encoding/json are left.
func TestThoughtFileAsEncodingJSON(t *testing.T) {
	texts := []string{
		"", "S1|H|plain ascii step", `quotes " and \ backslash`, "<b>&</b>",
		"tab\tnew line\ncarriage\rbell\x07 nul\x00 DEL\x7f", "\u2028 line and \u2029 paragraph separators",
		"bad UTF-8 \xff\xfe and a cut rune \xe2\x82", "é, 日本語, 🙂",
	}
	zone := time.FixedZone("", 5*3600+30*60)
	times := []time.Time{
		{}, time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC), time.Date(2026, 11, 25, 4, 0, 0, 123456789, time.UTC),
		time.Date(2026, 11, 25, 4, 0, 0, 120000000, zone), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
	}
	ints := []int{-7, 0, 1, 42, 999, 1000, 1 << 40}
	rng := rand.New(rand.NewSource(12))
	pick := func() *int {
		if rng.Intn(2) == 0 {
			return nil
		}
		n := ints[rng.Intn(len(ints))]
		return &n
	}
	check := func(td ledger.ThoughtData) {
		t.Helper()
		want, err := json.MarshalIndent(td, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendThoughtFile(nil, &td)
		if !ok {
			t.Fatalf("%+v was left to encoding/json", td)
		}
		if string(got) != string(want) {
			t.Fatalf("%+v:\ngot  %s\nwant %s", td, got, want)
		}
		file, err := encodeThoughtFile(td)
		if err != nil || string(file) != string(want)+"\n" {
			t.Fatalf("encodeThoughtFile: %q, %v", file, err)
		}
	}
	for _, text := range texts {
		for _, ts := range times {
			check(ledger.ThoughtData{Thought: text, ThoughtNumber: 3, TotalThoughts: 5, Timestamp: ts})
		}
	}
	for i := 0; i < 3000; i++ {
		check(ledger.ThoughtData{
			Thought:           texts[rng.Intn(len(texts))],
			ThoughtNumber:     ints[rng.Intn(len(ints))],
			TotalThoughts:     ints[rng.Intn(len(ints))],
			NextThoughtNeeded: rng.Intn(2) == 0,
			IsRevision:        rng.Intn(2) == 0,
			RevisesThought:    pick(),
			BranchFromThought: pick(),
			BranchID:          []string{"", "alt-1", texts[rng.Intn(len(texts))]}[rng.Intn(3)],
			NeedsMoreThoughts: rng.Intn(2) == 0,
			IncludeGuide:      rng.Intn(2) == 0,
			Timestamp:         times[rng.Intn(len(times))],
		})
	}

	now := time.Date(2026, 11, 25, 4, 0, 0, 0, time.UTC)
	for _, td := range []ledger.ThoughtData{
		{Thought: "critiqued", Timestamp: now, Critique: &ledger.Critique{Text: "ok", Model: "m", Timestamp: now}},
		{Thought: "with a run", Timestamp: now, RLM: &ledger.RLMResult{Query: "q"}},
		{Thought: "year 10000", Timestamp: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		if _, ok := appendThoughtFile(nil, &td); ok {
			t.Fatalf("%+v was written by hand; expected encoding/json", td)
		}
		want, werr := json.MarshalIndent(td, "", "  ")
		file, err := encodeThoughtFile(td)
		if (werr == nil) != (err == nil) || werr == nil && string(file) != string(want)+"\n" {
			t.Fatalf("encodeThoughtFile(%+v) = %q, %v; encoding/json %q, %v", td, file, err, want, werr)
		}
	}
}

// TestThoughtFileKnowsEveryField: appendThoughtFile writes the fields it
// knows, so a field added to ledger.ThoughtData (with omitempty it would
// not show in TestThoughtFileAsEncodingJSON's zero values) would be
// dropped from every thought file written by hand. This fails until the
// hand encoder, or its fallback to encoding/json, is taught the field.
func TestThoughtFileKnowsEveryField(t *testing.T) {
	known := "Thought thought|ThoughtNumber thoughtNumber|TotalThoughts totalThoughts|NextThoughtNeeded nextThoughtNeeded|" +
		"IsRevision isRevision,omitempty|RevisesThought revisesThought,omitempty|BranchFromThought branchFromThought,omitempty|" +
		"BranchID branchId,omitempty|NeedsMoreThoughts needsMoreThoughts,omitempty|IncludeGuide includeGuide,omitempty|" +
		"Timestamp timestamp|Critique critique,omitempty|RLM rlm,omitempty|Code code,omitempty"
	var fields []string
	rt := reflect.TypeFor[ledger.ThoughtData]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		fields = append(fields, f.Name+" "+f.Tag.Get("json"))
	}
	if got := strings.Join(fields, "|"); got != known {
		t.Fatalf("ledger.ThoughtData's fields changed:\n%s\nappendThoughtFile knows:\n%s", got, known)
	}
}
