package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// writeJSONList writes list as writeJSON does (an indented array), one
// element at a time: a listing of every session of a large ledger is not
// built, indented and copied as one buffer first.
func writeJSONList[T any](w io.Writer, list []T) error {
	if len(list) == 0 {
		return writeJSON(w, list)
	}
	out := bufio.NewWriterSize(w, 64<<10)
	if sessions, ok := any(list).([]ledger.Session); ok {
		return writeSessionsJSON(out, sessions)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	out.WriteString("[\n")
	for i := range list {
		buf.Reset()
		if err := enc.Encode(list[i]); err != nil {
			return err
		}
		out.WriteString("  ")
		out.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
		if i+1 < len(list) {
			out.WriteString(",\n")
		} else {
			out.WriteString("\n")
		}
	}
	out.WriteString("]\n")
	return out.Flush()
}

// writeTable writes rows as text/tabwriter does with padding 2 and spaces
// (every cell but the last of a line padded to its column's widest, in
// runes, plus two), but straight to a buffer: tabwriter keeps every cell
// of the table as its own piece until the end, which for every session of
// a large ledger cost more than reading them.
func writeTable(w io.Writer, rows [][]string) error {
	var widths []int
	for _, r := range rows {
		for c, cell := range r[:max(len(r)-1, 0)] {
			if c == len(widths) {
				widths = append(widths, 0)
			}
			widths[c] = max(widths[c], utf8.RuneCountInString(cell))
		}
	}
	out := bufio.NewWriterSize(w, 64<<10)
	for _, r := range rows {
		for c, cell := range r {
			out.WriteString(cell)
			if c < len(r)-1 {
				out.WriteString(strings.Repeat(" ", widths[c]-utf8.RuneCountInString(cell)+2))
			}
		}
		out.WriteByte('\n')
	}
	return out.Flush()
}

// writeSessionsJSON is writeJSONList for sessions, written out by hand:
// encoding/json's reflection and its indenting pass were a third of the
// CPU of listing every session of a large ledger. The bytes are
// encoding/json's (TestSessionsJSONAsEncodingJSON holds it to that, for
// every field of ledger.Session).
func writeSessionsJSON(out *bufio.Writer, list []ledger.Session) error {
	var q quoter
	b := make([]byte, 0, 1024)
	out.WriteString("[\n")
	for i := range list {
		s := &list[i]
		b = append(b[:0], "  {\n    \"id\": "...)
		b = q.append(b, s.ID)
		b = append(b, ",\n    \"title\": "...)
		b = q.append(b, s.Title)
		if s.Description != "" {
			b = append(b, ",\n    \"description\": "...)
			b = q.append(b, s.Description)
		}
		b = append(b, ",\n    \"tags\": "...)
		switch {
		case s.Tags == nil:
			b = append(b, "null"...)
		case len(s.Tags) == 0:
			b = append(b, "[]"...)
		default:
			b = append(b, "[\n"...)
			for j, t := range s.Tags {
				b = append(b, "      "...)
				b = q.append(b, t)
				if j+1 < len(s.Tags) {
					b = append(b, ',')
				}
				b = append(b, '\n')
			}
			b = append(b, "    ]"...)
		}
		b = append(b, ",\n    \"thoughtCount\": "...)
		b = strconv.AppendInt(b, int64(s.ThoughtCount), 10)
		b = append(b, ",\n    \"branchCount\": "...)
		b = strconv.AppendInt(b, int64(s.BranchCount), 10)
		if s.PartitionPath != "" {
			b = append(b, ",\n    \"partitionPath\": "...)
			b = q.append(b, s.PartitionPath)
		}
		var err error
		for _, f := range []struct {
			name string
			t    time.Time
		}{{"createdAt", s.CreatedAt}, {"updatedAt", s.UpdatedAt}, {"lastAccessedAt", s.LastAccessedAt}} {
			b = append(b, ",\n    \""...)
			b = append(b, f.name...)
			b = append(b, "\": "...)
			if b, err = appendTimeJSON(b, f.t); err != nil {
				return err
			}
		}
		b = append(b, "\n  }"...)
		if i+1 < len(list) {
			b = append(b, ',')
		}
		b = append(b, '\n')
		out.Write(b)
	}
	out.WriteString("]\n")
	return out.Flush()
}

// appendTimeJSON appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds, quoted). The ledger's times are UTC; any other zone, or a
// year MarshalJSON refuses, is left to MarshalJSON itself.
func appendTimeJSON(b []byte, t time.Time) ([]byte, error) {
	if _, off := t.Zone(); off != 0 || t.Year() < 0 || t.Year() > 9999 {
		j, err := t.MarshalJSON()
		return append(b, j...), err
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// quoter appends strings as JSON as encoding/json does with HTML escaping
// off. Most strings need no escape and are copied as they are; the rest
// go through encoding/json itself.
type quoter struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func (q *quoter) append(b []byte, s string) []byte {
	for _, r := range s {
		if r < 0x20 || r == '"' || r == '\\' || r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
			return q.slow(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func (q *quoter) slow(b []byte, s string) []byte {
	if q.enc == nil {
		q.enc = json.NewEncoder(&q.buf)
		q.enc.SetEscapeHTML(false)
	}
	q.buf.Reset()
	q.enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(q.buf.Bytes(), []byte("\n"))...)
}
