package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestWriteTableAsTabwriter: the table writer lays rows out byte for byte
// as text/tabwriter did (padding 2, spaces), wide characters included.
func TestWriteTableAsTabwriter(t *testing.T) {
	rows := [][]string{
		{"ID", "TITLE", "THOUGHTS", "BRANCHES", "UPDATED"},
		{"a", "Café planning", "1", "0", "2026-11-24T12:00:00Z"},
		{"bbbbbbbb-long-id", "", "12345", "3", "-"},
		{"c", "日本語のタイトル", "0", "10", "2026-11-24T12:00:01Z"},
		{"d", "plain", "7", "0", ""},
	}
	for n := 1; n <= len(rows); n++ {
		var want bytes.Buffer
		tw := tabwriter.NewWriter(&want, 0, 0, 2, ' ', 0)
		for _, r := range rows[:n] {
			tw.Write([]byte(strings.Join(r, "\t") + "\n"))
		}
		tw.Flush()
		var got bytes.Buffer
		if err := writeTable(&got, rows[:n]); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("%d rows:\ngot\n%s\nwant\n%s", n, got.String(), want.String())
		}
	}
}

// TestWriteJSONListAsWriteJSON: the streamed array is the bytes writeJSON
// writes for the whole slice, for none, one and several sessions.
func TestWriteJSONListAsWriteJSON(t *testing.T) {
	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	all := []ledger.Session{
		{ID: "a", Title: "<b>&html</b>", Tags: []string{"x"}, CreatedAt: at, UpdatedAt: at, ThoughtCount: 2},
		{ID: "b", Title: "line\nbreak \"quoted\"", CreatedAt: at, UpdatedAt: at.Add(time.Second)},
		{ID: "c"},
	}
	for n := 0; n <= len(all); n++ {
		list := all[:n]
		var want, got bytes.Buffer
		if err := writeJSON(&want, list); err != nil {
			t.Fatal(err)
		}
		if err := writeJSONList(&got, list); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("%d sessions:\ngot\n%s\nwant\n%s", n, got.String(), want.String())
		}
		if !json.Valid(got.Bytes()) {
			t.Fatalf("%d sessions: not JSON", n)
		}
	}
}

// TestSessionsJSONAsEncodingJSON: the hand-written session encoder writes
// encoding/json's bytes for every field of ledger.Session, set and unset,
// with strings that need escapes and times in other zones. A field added
// to ledger.Session and not to the encoder fails here.
func TestSessionsJSONAsEncodingJSON(t *testing.T) {
	typ := reflect.TypeFor[ledger.Session]()
	var names []string
	for f := range typ.Fields() {
		names = append(names, f.Tag.Get("json"))
	}
	if got, want := strings.Join(names, " "), "id title description,omitempty tags thoughtCount branchCount partitionPath,omitempty createdAt updatedAt lastAccessedAt"; got != want {
		t.Fatalf("ledger.Session's fields are now %q; writeSessionsJSON writes %q: teach it the change", got, want)
	}
	at := time.Date(2026, 11, 24, 12, 0, 0, 123456789, time.UTC)
	east := time.FixedZone("east", 5*3600+30*60)
	odd := []string{"", "plain", "<b>&html</b>", "line\nbreak \"quoted\" back\\slash", "tab\tbell\a\x7f", "Café 日本語 🎉", "bad \xff utf8", "sep \u2028", "sep \u2029", "\ufffd"}
	var all []ledger.Session
	for i, s := range odd {
		all = append(all, ledger.Session{
			ID: s, Title: odd[(i+1)%len(odd)], Description: odd[(i+2)%len(odd)],
			Tags:         [][]string{nil, {}, {s}, {s, "x", odd[(i+3)%len(odd)]}}[i%4],
			ThoughtCount: i * 1000, BranchCount: -i, PartitionPath: odd[(i+4)%len(odd)],
			CreatedAt: at.Add(time.Duration(i) * time.Hour), UpdatedAt: at.In(east),
			LastAccessedAt: [3]time.Time{{}, at, at.Truncate(time.Second)}[i%3],
		})
	}
	for n := 0; n <= len(all); n++ {
		var want, got bytes.Buffer
		if err := writeJSON(&want, all[:n]); err != nil {
			t.Fatal(err)
		}
		if err := writeJSONList(&got, all[:n]); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("%d sessions:\ngot\n%s\nwant\n%s", n, got.String(), want.String())
		}
	}
	// A time encoding/json refuses is refused here too.
	bad := []ledger.Session{{ID: "y", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}
	if err := writeJSONList(io.Discard, bad); err == nil {
		t.Fatal("a year past 9999 was written")
	}
}
