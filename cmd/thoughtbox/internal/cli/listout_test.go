package cli

import (
	"bytes"
	"encoding/json"
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
