package agentconfig

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Codex's config.toml is edited without a TOML library: we own one table,
// [<servers>.<name>], and leave every other byte of the file as it was.
// A scanner cuts the file into statements (a table header, a key = value
// that may span lines, a comment or a blank line), enough to find that
// table's header and keys and to refuse a file it cannot follow; values
// are skipped, not interpreted, except the two we compare.

// localDateTime matches the one kind of bare value with a space in it: a
// date and a time (1979-05-27 07:32:00Z).
var localDateTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2} \d{2}:`)

type stmtKind int

const (
	stmtOther      stmtKind = iota // blank line or comment
	stmtTable                      // [a.b]
	stmtArrayTable                 // [[a.b]]
	stmtKeyValue                   // a.b = value
)

// stmt is one statement: its bytes are data[start:end], end just past its
// line's newline (or at the end of the file).
type stmt struct {
	kind       stmtKind
	start, end int
	path       []string // the header's, or the key's (relative to its table)
	valueStart int      // where the value begins (key = value)
	valueEnd   int      // where it ends, before any comment
}

type tomlScanner struct {
	data []byte
	pos  int
}

func (s *tomlScanner) fail(format string, args ...any) error {
	line := 1 + bytes.Count(s.data[:min(s.pos, len(s.data))], []byte("\n"))
	return fmt.Errorf("not TOML: line %d: %s", line, fmt.Sprintf(format, args...))
}

func (s *tomlScanner) peek() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

func (s *tomlScanner) skipSpace() {
	for s.pos < len(s.data) && (s.data[s.pos] == ' ' || s.data[s.pos] == '\t') {
		s.pos++
	}
}

// endLine accepts blanks and a comment up to the end of the line.
func (s *tomlScanner) endLine() error {
	s.skipSpace()
	if s.peek() == '#' {
		for s.pos < len(s.data) && s.data[s.pos] != '\n' {
			s.pos++
		}
	}
	if s.peek() == '\r' {
		s.pos++
		if s.peek() != '\n' {
			return s.fail("a carriage return without a line feed")
		}
	}
	switch s.peek() {
	case '\n':
		s.pos++
	case 0:
		if s.pos < len(s.data) {
			return s.fail("unexpected NUL byte")
		}
	default:
		return s.fail("unexpected %q after the statement", s.peek())
	}
	return nil
}

func scanTOML(data []byte) ([]stmt, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("not TOML: not UTF-8")
	}
	s := &tomlScanner{data: data}
	if bytes.HasPrefix(data, []byte("\ufeff")) {
		s.pos = 3 // a byte-order mark some editors write
	}
	var out []stmt
	for s.pos < len(data) {
		st := stmt{start: s.pos}
		s.skipSpace()
		switch c := s.peek(); {
		case c == '#' || c == '\n' || c == '\r' || c == 0:
			st.kind = stmtOther
		case c == '[':
			if err := s.header(&st); err != nil {
				return nil, err
			}
		default:
			if err := s.keyValue(&st); err != nil {
				return nil, err
			}
		}
		if err := s.endLine(); err != nil {
			return nil, err
		}
		st.end = s.pos
		out = append(out, st)
	}
	return out, nil
}

func (s *tomlScanner) header(st *stmt) error {
	s.pos++
	st.kind = stmtTable
	if s.peek() == '[' {
		s.pos++
		st.kind = stmtArrayTable
	}
	path, err := s.key()
	if err != nil {
		return err
	}
	st.path = path
	closing := "]"
	if st.kind == stmtArrayTable {
		closing = "]]"
	}
	if !bytes.HasPrefix(s.data[s.pos:], []byte(closing)) {
		return s.fail("table header without %s", closing)
	}
	s.pos += len(closing)
	return nil
}

func (s *tomlScanner) keyValue(st *stmt) error {
	st.kind = stmtKeyValue
	path, err := s.key()
	if err != nil {
		return err
	}
	st.path = path
	if s.peek() != '=' {
		return s.fail("expected = after the key %s", strings.Join(path, "."))
	}
	s.pos++
	s.skipSpace()
	st.valueStart = s.pos
	if err := s.value(); err != nil {
		return err
	}
	st.valueEnd = s.pos
	return nil
}

// key reads a dotted key: bare, "basic" or 'literal' parts.
func (s *tomlScanner) key() ([]string, error) {
	var path []string
	for {
		s.skipSpace()
		var part string
		switch c := s.peek(); {
		case c == '"' || c == '\'':
			v, err := s.str(false)
			if err != nil {
				return nil, err
			}
			part = v
		case isBare(c):
			start := s.pos
			for isBare(s.peek()) {
				s.pos++
			}
			part = string(s.data[start:s.pos])
		default:
			return nil, s.fail("expected a key")
		}
		path = append(path, part)
		s.skipSpace()
		if s.peek() != '.' {
			return path, nil
		}
		s.pos++
	}
}

func isBare(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value skips one value: a string, an array or inline table (which may
// span lines and hold comments), or a scalar up to a comment or the end
// of the line.
func (s *tomlScanner) value() error {
	switch c := s.peek(); c {
	case '"', '\'':
		_, err := s.str(true)
		return err
	case '[', '{':
		return s.nested(c)
	}
	start := s.pos
	for s.pos < len(s.data) && s.data[s.pos] != '\n' && s.data[s.pos] != '#' && s.data[s.pos] != ',' && s.data[s.pos] != ']' && s.data[s.pos] != '}' {
		s.pos++
	}
	text := strings.TrimSpace(string(s.data[start:s.pos]))
	if text == "" {
		return s.fail("expected a value")
	}
	if strings.ContainsAny(text, " \t\r") && !localDateTime.MatchString(text) {
		return s.fail("unexpected %q in a value", text)
	}
	for s.pos > start && (s.data[s.pos-1] == ' ' || s.data[s.pos-1] == '\t' || s.data[s.pos-1] == '\r') {
		s.pos--
	}
	return nil
}

// nested skips an array or an inline table.
func (s *tomlScanner) nested(open byte) error {
	closing := byte(']')
	if open == '{' {
		closing = '}'
	}
	s.pos++
	for {
		// Blanks, newlines and comments between elements.
		for {
			s.skipSpace()
			switch s.peek() {
			case '\n', '\r', ',':
				s.pos++
				continue
			case '#':
				for s.pos < len(s.data) && s.data[s.pos] != '\n' {
					s.pos++
				}
				continue
			}
			break
		}
		switch c := s.peek(); {
		case c == 0 && s.pos >= len(s.data):
			return s.fail("unclosed %c", open)
		case c == closing:
			s.pos++
			return nil
		case open == '{':
			if _, err := s.key(); err != nil {
				return err
			}
			if s.peek() != '=' {
				return s.fail("expected = in an inline table")
			}
			s.pos++
			s.skipSpace()
			if err := s.value(); err != nil {
				return err
			}
		default:
			if err := s.value(); err != nil {
				return err
			}
		}
	}
}

// str reads a string at s.pos and returns its value; multi says that
// multi-line strings (""" and ”') are allowed.
func (s *tomlScanner) str(multi bool) (string, error) {
	q := s.data[s.pos]
	triple := bytes.Repeat([]byte{q}, 3)
	if multi && bytes.HasPrefix(s.data[s.pos:], triple) {
		end := bytes.Index(s.data[s.pos+3:], triple)
		if q == '"' {
			end = closingTriple(s.data[s.pos+3:])
		}
		if end < 0 {
			return "", s.fail("unclosed multi-line string")
		}
		s.pos += 3 + end + 3
		for s.peek() == q { // up to two quotes may end the content
			s.pos++
		}
		return "", nil
	}
	start := s.pos
	s.pos++
	for s.pos < len(s.data) && s.data[s.pos] != q && s.data[s.pos] != '\n' {
		if q == '"' && s.data[s.pos] == '\\' {
			s.pos++
		}
		s.pos++
	}
	if s.peek() != q {
		return "", s.fail("unclosed string")
	}
	s.pos++
	v, ok := unquoteTOML(string(s.data[start:s.pos]))
	if !ok {
		return "", s.fail("bad escape in a string")
	}
	return v, nil
}

// closingTriple finds the """ that ends a multi-line basic string.
func closingTriple(b []byte) int {
	for i := 0; i+2 < len(b); i++ {
		switch {
		case b[i] == '\\':
			i++
		case b[i] == '"' && b[i+1] == '"' && b[i+2] == '"':
			return i
		}
	}
	return -1
}

// unquoteTOML reads a one-line basic or literal string.
func unquoteTOML(q string) (string, bool) {
	if len(q) < 2 {
		return "", false
	}
	if q[0] == '\'' {
		return q[1 : len(q)-1], true
	}
	var b strings.Builder
	body := q[1 : len(q)-1]
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(body) {
			return "", false
		}
		switch body[i] {
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case '"', '\\':
			b.WriteByte(body[i])
		case 'e': // TOML 1.1, which newer readers accept
			b.WriteByte(0x1b)
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[body[i]]
			if i+1+n > len(body) {
				return "", false
			}
			r, err := strconv.ParseUint(body[i+1:i+1+n], 16, 32)
			if err != nil || !utf8.ValidRune(rune(r)) {
				return "", false
			}
			b.WriteRune(rune(r))
			i += n
		default:
			return "", false
		}
	}
	return b.String(), true
}

// quoteTOML writes s as a basic string.
func quoteTOML(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlValue writes a field's value: a string or a list of strings.
func tomlValue(v any) string {
	switch v := v.(type) {
	case string:
		return quoteTOML(v)
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = quoteTOML(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	panic(fmt.Sprintf("agentconfig: no TOML for %T", v))
}

// sameTOML says whether the value text (as written in the file) holds v:
// a one-line string, or an array of them.
func sameTOML(text string, v any) bool {
	switch v := v.(type) {
	case string:
		got, ok := unquoteTOML(strings.TrimSpace(text))
		return ok && got == v
	case []string:
		s := &tomlScanner{data: []byte(strings.TrimSpace(text))}
		if s.peek() != '[' {
			return false
		}
		s.pos++
		var got []string
		for {
			for s.skipSpace(); s.peek() == '\n' || s.peek() == '\r' || s.peek() == ',' || s.peek() == '#'; s.skipSpace() {
				if s.peek() == '#' {
					for s.pos < len(s.data) && s.data[s.pos] != '\n' {
						s.pos++
					}
					continue
				}
				s.pos++
			}
			switch s.peek() {
			case ']':
				return slices.Equal(got, v)
			case '"', '\'':
				str, err := s.str(false)
				if err != nil {
					return false
				}
				got = append(got, str)
			default:
				return false // another kind of value: rewrite it
			}
		}
	}
	return false
}

// mergeTOML puts our entry in the [servers.name] table of data: the keys
// of want are set (a key already there is replaced where it stands, a
// missing one goes right under the header), every other byte stays. With
// no such table, one is appended. A file that defines the entry another
// way (a dotted key, an inline table) is refused rather than guessed at.
func mergeTOML(data []byte, servers, name string, want []field) ([]byte, Outcome, error) {
	stmts, err := scanTOML(data)
	if err != nil {
		return nil, 0, err
	}
	ours := []string{servers, name}
	header := -1
	var table []string
	for i, st := range stmts {
		switch st.kind {
		case stmtTable, stmtArrayTable:
			table = st.path
			if st.kind == stmtArrayTable && hasPrefix(ours, st.path) {
				return nil, 0, fmt.Errorf("[[%s]] is an array of tables; Codex expects [%s.%s] tables", strings.Join(st.path, "."), servers, name)
			}
			if st.kind == stmtTable && slices.Equal(st.path, ours) {
				if header >= 0 {
					return nil, 0, fmt.Errorf("[%s.%s] appears twice", servers, name)
				}
				header = i
			}
		case stmtKeyValue:
			full := append(slices.Clip(table), st.path...)
			if hasPrefix(ours, full) && len(table) < len(ours) {
				return nil, 0, fmt.Errorf("%s is set by a key outside a [%s.%s] table; move it into one (or remove it) and run this again", strings.Join(full, "."), servers, name)
			}
		}
	}
	if header < 0 {
		var b bytes.Buffer
		b.Write(data)
		if len(data) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
			b.WriteByte('\n')
		}
		if len(bytes.TrimSpace(data)) > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "[%s.%s]\n", servers, name)
		for _, f := range want {
			fmt.Fprintf(&b, "%s = %s\n", f.key, tomlValue(f.value))
		}
		return b.Bytes(), Added, nil
	}
	return editTable(data, stmts, header, want)
}

// hasPrefix says whether a and b agree on their common length: either
// path lies inside the other.
func hasPrefix(a, b []string) bool {
	n := min(len(a), len(b))
	return slices.Equal(a[:n], b[:n])
}

// edit replaces data[start:end] with text.
type edit struct {
	start, end int
	text       string
}

// editTable sets want's keys in the table whose header is stmts[header].
func editTable(data []byte, stmts []stmt, header int, want []field) ([]byte, Outcome, error) {
	for i := header + 1; i < len(stmts) && stmts[i].kind != stmtTable && stmts[i].kind != stmtArrayTable; i++ {
		if st := stmts[i]; st.kind == stmtKeyValue && st.path[0] == "url" {
			return nil, 0, fmt.Errorf("%s %w (url); enable writes a command entry: remove that table to have it written, or leave this agent out", strings.Join(stmts[header].path, "."), ErrRemoteEntry)
		}
	}
	var edits []edit
	for _, f := range want {
		line := f.key + " = " + tomlValue(f.value) + "\n"
		at := -1
		for i := header + 1; i < len(stmts) && stmts[i].kind != stmtTable && stmts[i].kind != stmtArrayTable; i++ {
			if st := stmts[i]; st.kind == stmtKeyValue && len(st.path) >= 1 && st.path[0] == f.key {
				if len(st.path) > 1 || at >= 0 {
					return nil, 0, fmt.Errorf("%s is set more than once, or by dotted keys, in the table; leave one %s = … line", f.key, f.key)
				}
				at = i
			}
		}
		if at < 0 {
			end := stmts[header].end
			if end == len(data) && !bytes.HasSuffix(data, []byte("\n")) {
				line = "\n" + line
			}
			edits = append(edits, edit{end, end, line})
			continue
		}
		st := stmts[at]
		if sameTOML(string(data[st.valueStart:st.valueEnd]), f.value) {
			continue
		}
		if st.end == len(data) && !bytes.HasSuffix(data, []byte("\n")) {
			line = strings.TrimSuffix(line, "\n")
		}
		edits = append(edits, edit{st.start, st.end, line})
	}
	if len(edits) == 0 {
		return data, Unchanged, nil
	}
	// Apply from the end, so that earlier offsets stay right: by start,
	// and at one start a replacement before the insertions there (which
	// then land in front of it); insertions at one place keep want's order.
	slices.SortStableFunc(edits, func(a, b edit) int {
		if a.start != b.start {
			return b.start - a.start
		}
		return b.end - a.end
	})
	out := slices.Clone(data)
	for i := 0; i < len(edits); {
		j := i
		var text strings.Builder
		for j < len(edits) && edits[j].start == edits[i].start && edits[j].end == edits[i].end {
			j++
		}
		// Same place: those are insertions, written in want's order.
		for k := i; k < j; k++ {
			text.WriteString(edits[k].text)
		}
		out = slices.Concat(out[:edits[i].start], []byte(text.String()), out[edits[i].end:])
		i = j
	}
	return out, Updated, nil
}
