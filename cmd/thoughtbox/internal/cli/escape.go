package cli

import (
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// controlEscaper copies text to a person's screen with control characters
// spelled out. Agents write the text shown by show, sessions, search and
// the rest; an ESC or a CSI in a title must not move the cursor, retitle
// the window or hide a line on the terminal of whoever reads the ledger.
// Newlines, tabs and CRLF line ends pass through.
//
// C0 controls, DEL and C1 controls (U+0080–U+009F, which some terminals
// obey as 8-bit escape sequences) are written as \xNN or \uNNNN, so the
// reader sees that the text holds them.
type controlEscaper struct {
	w io.Writer
	// held is the start of a UTF-8 sequence cut by a Write boundary.
	held []byte
}

// unescaped is the writer under a controlEscaper (w itself otherwise):
// what to ask whether output goes to a terminal.
func unescaped(w io.Writer) io.Writer {
	if e, ok := w.(*controlEscaper); ok {
		return e.w
	}
	return w
}

func (e *controlEscaper) Write(p []byte) (int, error) {
	n := len(p)
	if len(e.held) > 0 {
		p = append(e.held, p...)
		e.held = nil
	}
	var out []byte
	clean := 0 // p[clean:i] needs no change
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			if c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f) {
				i++
				continue
			}
			if c == '\r' {
				// A CR that ends a line (CRLF) moves nothing on screen.
				if i+1 == len(p) {
					e.held = []byte{'\r'}
					p = p[:i]
					break
				}
				if p[i+1] == '\n' {
					i += 2
					continue
				}
			}
			out = append(out, p[clean:i]...)
			out = append(out, `\x`...)
			out = append(out, hexByte(c)...)
			i++
			clean = i
			continue
		}
		if !utf8.FullRune(p[i:]) {
			// Keep an incomplete sequence for the next Write.
			e.held = append([]byte(nil), p[i:]...)
			p = p[:i]
			break
		}
		r, size := utf8.DecodeRune(p[i:])
		if r >= 0x80 && r <= 0x9f {
			out = append(out, p[clean:i]...)
			out = append(out, `\u00`...)
			out = append(out, hexByte(byte(r))...)
			clean = i + size
		}
		i += size
	}
	if out == nil {
		if _, err := e.w.Write(p); err != nil {
			return 0, err
		}
		return n, nil
	}
	out = append(out, p[clean:]...)
	if _, err := e.w.Write(out); err != nil {
		return 0, err
	}
	return n, nil
}

// flush writes a sequence still held back (the output ended inside it).
func (e *controlEscaper) flush() {
	switch {
	case len(e.held) == 1 && e.held[0] == '\r':
		io.WriteString(e.w, `\x0d`)
	case len(e.held) > 0:
		e.w.Write(e.held)
	}
	e.held = nil
}

func hexByte(c byte) string {
	s := strconv.FormatUint(uint64(c), 16)
	if len(s) == 1 {
		s = "0" + s
	}
	return s
}

// isTerminal reports whether w is a terminal. Being a character device is
// not enough: /dev/null is one too, and output sent there is for no one.
// term.IsTerminal asks the terminal driver (termios on Unix, the console
// mode on Windows), which only a real terminal answers. The descriptor is
// borrowed through SyscallConn because Fd would switch the file to
// blocking mode.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	tty := false
	if err := rc.Control(func(fd uintptr) { tty = term.IsTerminal(int(fd)) }); err != nil {
		return false
	}
	return tty
}

// escapesStdout says whether a command's standard output is for a person,
// and so gets control characters escaped. serve and mcp speak MCP on it; JSON
// escapes control characters itself; an export is data meant for a file,
// so it is escaped only when it goes to a terminal.
func escapesStdout(command string, format Format, stdout io.Writer) bool {
	name, _, _ := strings.Cut(command, " ")
	switch {
	case name == "serve" || name == "mcp":
		return false
	case format == FormatJSON:
		return false
	case name == "export":
		return isTerminal(stdout)
	}
	return true
}
