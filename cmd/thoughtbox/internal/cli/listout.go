package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"unicode/utf8"
)

// writeJSONList writes list as writeJSON does (an indented array), one
// element at a time: a listing of every session of a large ledger is not
// built, indented and copied as one buffer first.
func writeJSONList[T any](w io.Writer, list []T) error {
	if len(list) == 0 {
		return writeJSON(w, list)
	}
	out := bufio.NewWriterSize(w, 64<<10)
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
