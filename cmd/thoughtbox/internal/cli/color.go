package cli

import (
	"bufio"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/config"
)

// The SGR sequences the listings use: a bold header, and session ids in
// yellow as git shows commit ids.
const (
	sgrBold   = "\x1b[1m"
	sgrYellow = "\x1b[33m"
	sgrReset  = "\x1b[0m"
)

// wantColor says whether text output gets colour: only on a terminal,
// never with --no-color or NO_COLOR, never for JSON.
func wantColor(stdout io.Writer, format Format, noColorFlag bool, lookupEnv func(string) (string, bool)) bool {
	if noColorFlag || format != FormatText {
		return false
	}
	if v, ok := lookupEnv(config.EnvNoColor); ok && v != "" {
		return false
	}
	return isTerminal(unescaped(stdout))
}

// escapeString is s with control characters spelled out, as a
// controlEscaper writes it.
func escapeString(s string) string {
	var b strings.Builder
	e := &controlEscaper{w: &b}
	e.Write([]byte(s))
	e.flush()
	return b.String()
}

// writeColorTable is writeTable with the header in bold and the first
// column (an id) in yellow. The cells are escaped here and the table goes
// to the terminal under any escaper, so that the escaper does not spell
// out the colour sequences themselves.
func writeColorTable(w io.Writer, rows [][]string) error {
	esc := make([][]string, len(rows))
	for i, r := range rows {
		esc[i] = make([]string, len(r))
		for c, cell := range r {
			esc[i][c] = escapeString(cell)
		}
	}
	var widths []int
	for _, r := range esc {
		for c, cell := range r[:max(len(r)-1, 0)] {
			if c == len(widths) {
				widths = append(widths, 0)
			}
			widths[c] = max(widths[c], utf8.RuneCountInString(cell))
		}
	}
	out := bufio.NewWriterSize(unescaped(w), 64<<10)
	for i, r := range esc {
		if i == 0 {
			out.WriteString(sgrBold)
		}
		for c, cell := range r {
			if i > 0 && c == 0 {
				out.WriteString(sgrYellow + cell + sgrReset)
			} else {
				out.WriteString(cell)
			}
			if c < len(r)-1 {
				out.WriteString(strings.Repeat(" ", widths[c]-utf8.RuneCountInString(cell)+2))
			}
		}
		if i == 0 {
			out.WriteString(sgrReset)
		}
		out.WriteByte('\n')
	}
	return out.Flush()
}
