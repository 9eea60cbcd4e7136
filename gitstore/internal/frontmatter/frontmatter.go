// Package frontmatter reads and writes the YAML front matter of the
// knowledge files (patterns and notes): a block of "key: value" lines
// between "---" lines, then a blank line and the content.
//
// Writing is strict, so any YAML reader accepts what it writes: a value is
// plain when that is unambiguous and otherwise a double-quoted scalar that
// is also a JSON string. Reading is lenient, because people edit these
// files by hand: quoted, block and flow values, lists in three spellings,
// comments; it never fails, it ignores what it cannot read.
package frontmatter

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Field is one key to write. A list field (List set, or IsList) is written
// as a flow sequence; a Raw value is written as it is (a timestamp); any
// other value goes through Scalar.
type Field struct {
	Key    string
	Value  string
	List   []string
	IsList bool
	Raw    bool
}

// Encode writes the front matter of fields, a blank line, content and a
// newline; Split and TrimContent take exactly those away again, so the
// content comes back byte for byte.
func Encode(fields []Field, content string) []byte {
	var b bytes.Buffer
	b.WriteString("---\n")
	for _, f := range fields {
		b.WriteString(f.Key + ": ")
		switch {
		case f.IsList || f.List != nil:
			b.WriteString("[")
			for i, v := range f.List {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(Scalar(v))
			}
			b.WriteString("]")
		case f.Raw:
			b.WriteString(f.Value)
		default:
			b.WriteString(Scalar(f.Value))
		}
		b.WriteString("\n")
	}
	b.WriteString("---\n\n")
	b.WriteString(content)
	b.WriteString("\n")
	return b.Bytes()
}

// Document is a file read back: its content, and the front matter's
// values when it had any.
type Document struct {
	Content string
	Values  []Value
	// HasFrontMatter is false for a file with none: its whole text is
	// then the content.
	HasFrontMatter bool
}

// Read splits a file into front matter and content, leniently: a leading
// byte-order mark is dropped, front matter is optional.
func Read(data []byte) Document {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	fm, content, ok := Split(data)
	if !ok {
		return Document{Content: TrimContent(data)}
	}
	return Document{Content: TrimContent(content), Values: Parse(fm), HasFrontMatter: true}
}

// Scalar writes s plain when a YAML reader would read it back as the
// same string: it starts with a letter, holds only letters, digits, spaces
// and -_./()+ (no ": ", " #", commas or brackets, which YAML reads as
// structure), does not end in a space, and is not a YAML boolean or null.
// Anything else is double-quoted, with every character YAML does not allow
// raw (controls, DEL, C1, line and paragraph separators, BOM) escaped, so
// the result is both a JSON string and a YAML double-quoted scalar.
func Scalar(s string) string {
	if plainSafe(s) {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\uFEFF':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func plainSafe(s string) bool {
	if s == "" || !utf8.ValidString(s) || strings.HasSuffix(s, " ") {
		return false
	}
	for i, r := range s {
		switch {
		case unicode.IsLetter(r):
		case i == 0:
			return false
		case unicode.IsDigit(r) || r == ' ' || strings.ContainsRune("-_./()+", r):
		default:
			return false
		}
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null":
		return false
	}
	return true
}

// Split finds front matter: a first line "---" and a later line
// "---" (or YAML's "..."). Without both there is none.
func Split(data []byte) (fm []byte, content []byte, ok bool) {
	first, rest, found := bytes.Cut(data, []byte("\n"))
	if !found || string(bytes.TrimRight(first, " \t\r")) != "---" {
		return nil, nil, false
	}
	for off := 0; off < len(rest); {
		line := rest[off:]
		next := len(rest)
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line, next = line[:i], off+i+1
		}
		if t := string(bytes.TrimRight(line, " \t\r")); t == "---" || t == "..." {
			return rest[:off], rest[next:], true
		}
		off = next
	}
	return nil, nil, false
}

// TrimContent removes the blank line after the front matter and the
// newline that ends the file, as Encode adds them; a file edited
// on Windows may have "\r\n" there instead.
func TrimContent(b []byte) string {
	if bytes.HasPrefix(b, []byte("\n")) {
		b = b[1:]
	} else if bytes.HasPrefix(b, []byte("\r\n")) {
		b = b[2:]
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	return string(b)
}

func NormalizeKey(k string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(k))
}

// Value is one key of the front matter with what was written for it.
type Value struct {
	Key string
	// inline is the text after "key:", trimmed; block holds the lines
	// below it that belong to it (a "- item" list, an indented text).
	inline string
	block  []string
}

func Parse(fm []byte) []Value {
	var out []Value
	lines := strings.Split(string(fm), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimRight(lines[i], " \t\r")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' || strings.HasPrefix(line, "- ") || line == "-" {
			continue // below a key we do not read
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v := Value{Key: strings.Trim(key, " \t\"'"), inline: strings.TrimSpace(value)}
		for i+1 < len(lines) {
			next := strings.TrimRight(lines[i+1], " \t\r")
			if next != "" && next[0] != ' ' && next[0] != '\t' && !strings.HasPrefix(next, "- ") && next != "-" {
				break
			}
			v.block = append(v.block, next)
			i++
		}
		out = append(out, v)
	}
	return out
}

// Scalar reads the value as one string.
func (v Value) Scalar() string {
	s := v.inline
	switch {
	case strings.HasPrefix(s, `"`):
		text, _ := unquoteDouble(v.joined())
		return clean(text)
	case strings.HasPrefix(s, "'"):
		text, _ := unquoteSingle(v.joined())
		return clean(text)
	case strings.HasPrefix(s, "|") || strings.HasPrefix(s, ">"):
		return clean(blockText(v.block, s[0] == '>'))
	}
	// A plain scalar: a comment starts at " #"; indented lines below
	// continue it, folded into spaces.
	parts := []string{stripComment(s)}
	for _, l := range v.block {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "- ") && t != "-" {
			parts = append(parts, stripComment(t))
		}
	}
	return clean(strings.TrimSpace(strings.Join(parts, " ")))
}

// joined is the inline value with the lines below it, for a quoted string
// that spans lines.
func (v Value) joined() string {
	if len(v.block) == 0 {
		return v.inline
	}
	parts := []string{v.inline}
	for _, l := range v.block {
		if t := strings.TrimSpace(l); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, " ")
}

// List reads the value as a list of strings.
func (v Value) List() []string {
	var out []string
	add := func(s string) {
		if s = clean(s); strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	s := v.inline
	switch {
	case strings.HasPrefix(s, "["):
		for _, item := range flowItems(v.joined()) {
			add(item)
		}
	case s == "" || strings.HasPrefix(s, "#"):
		for _, l := range v.block {
			t := strings.TrimSpace(l)
			if item, ok := strings.CutPrefix(t, "-"); ok {
				add(itemScalar(strings.TrimSpace(item)))
			}
		}
	default:
		// tags: debugging, concurrency
		for _, item := range strings.Split(Value{inline: s, block: v.block}.Scalar(), ",") {
			add(strings.TrimSpace(item))
		}
	}
	return out
}

// flowItems splits a flow sequence "[a, "b, c", 'd']" into its items.
func flowItems(s string) []string {
	s = strings.TrimPrefix(s, "[")
	var out []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" || s[0] == ']' {
			return out
		}
		var item string
		switch s[0] {
		case '"':
			item, s = unquoteDouble(s)
		case '\'':
			item, s = unquoteSingle(s)
		default:
			end := strings.IndexAny(s, ",]")
			if end < 0 {
				end = len(s)
			}
			item, s = strings.TrimSpace(s[:end]), s[end:]
		}
		out = append(out, item)
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ",") {
			return out // "]" or something we cannot read: stop
		}
		s = s[1:]
	}
}

func itemScalar(s string) string {
	switch {
	case strings.HasPrefix(s, `"`):
		t, _ := unquoteDouble(s)
		return t
	case strings.HasPrefix(s, "'"):
		t, _ := unquoteSingle(s)
		return t
	}
	return stripComment(s)
}

func stripComment(s string) string {
	if strings.HasPrefix(s, "#") {
		return ""
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// unquoteDouble reads a YAML double-quoted scalar at the start of s (JSON
// strings are a subset) and returns it and what follows. An unterminated
// string runs to the end; an unknown escape is kept as written.
func unquoteDouble(s string) (string, string) {
	var b strings.Builder
	i := 1
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), s[i+1:]
		case c == '\\' && i+1 < len(s):
			i++
			e := s[i]
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case '0':
				b.WriteByte(0)
			case 'a':
				b.WriteByte('\a')
			case 'v':
				b.WriteByte('\v')
			case 'e':
				b.WriteByte(0x1b)
			case ' ', '"', '/', '\\':
				b.WriteByte(e)
			case '\t':
				b.WriteByte('\t')
			case 'N':
				b.WriteString("\u0085")
			case '_':
				b.WriteString("\u00a0")
			case 'L':
				b.WriteString("\u2028")
			case 'P':
				b.WriteString("\u2029")
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				r, ok := hexRune(s, i+1, n)
				if !ok {
					b.WriteByte('\\')
					b.WriteByte(e)
					break
				}
				i += n
				// A JSON surrogate pair: \ud83d\ude00.
				if utf16High(r) {
					if lo, ok := hexRune(s, i+3, 4); ok && i+2 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' && utf16Low(lo) {
						r = (r-0xd800)<<10 + (lo - 0xdc00) + 0x10000
						i += 6
					}
				}
				b.WriteRune(r)
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
		i++
	}
	return b.String(), ""
}

func hexRune(s string, at, n int) (rune, bool) {
	if at < 0 || at+n > len(s) {
		return 0, false
	}
	v, err := strconv.ParseUint(s[at:at+n], 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}

func utf16High(r rune) bool { return r >= 0xd800 && r < 0xdc00 }
func utf16Low(r rune) bool  { return r >= 0xdc00 && r < 0xe000 }

// unquoteSingle reads a YAML single-quoted scalar (” is a quote).
func unquoteSingle(s string) (string, string) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] == '\'' {
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), s[i+1:]
		}
		b.WriteByte(s[i])
	}
	return b.String(), ""
}

// blockText reads a "|" (literal) or ">" (folded) block: the lines below
// the key, less their common indentation; trailing blank lines dropped.
func blockText(lines []string, folded bool) string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	var out []string
	for _, l := range lines {
		if len(l) >= indent && indent >= 0 {
			l = l[indent:]
		} else {
			l = strings.TrimLeft(l, " \t")
		}
		out = append(out, l)
	}
	sep := "\n"
	if folded {
		sep = " "
	}
	return strings.TrimRight(strings.Join(out, sep), " \n")
}

// clean makes a front-matter value valid UTF-8, so that what was read can
// be written back as it reads.
func clean(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// ParseDate accepts RFC 3339 and the shorter forms people type.
func ParseDate(s string) time.Time {
	s = strings.Trim(s, `"' `)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
