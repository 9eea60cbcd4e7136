package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// The knowledge zone lives on its own ref, refs/heads/knowledge, so that it
// is pushed and pulled like the sessions and read with plain Git:
//
//	patterns/<id>.md    one pattern
//	notes/<id>.md       one scratchpad note
//
// Each file is Markdown with front matter (see encodeKnowledge); each
// change is one commit whose message names it, with a
// "Thoughtbox-Knowledge: pattern/<id>" trailer. People may edit these files
// by hand and push them back, so reading is lenient (parseKnowledge).

const knowledgeRef = "refs/heads/knowledge"

// maxKnowledgeAttempts bounds how often a write re-reads the ref after
// losing its compare-and-swap to another writer (of any entry: the whole
// zone shares one ref).
const maxKnowledgeAttempts = 64

var _ ledger.KnowledgeStore = (*Store)(nil)

func knowledgeDir(kind ledger.KnowledgeKind) (string, error) {
	switch kind {
	case ledger.KindPattern:
		return "patterns", nil
	case ledger.KindNote:
		return "notes", nil
	}
	return "", fmt.Errorf("unknown knowledge kind %q", kind)
}

// knowledgeTip is the zone as of one commit of its ref.
type knowledgeTip struct {
	tip  hash // zeroHash: the ref does not exist yet
	when time.Time
	root *object.Tree
}

func (s *Store) readKnowledgeTip() (*knowledgeTip, error) {
	tip, err := s.be.readRef(knowledgeRef)
	if err != nil {
		return nil, err
	}
	k := &knowledgeTip{tip: tip, root: &object.Tree{}}
	if tip == zeroHash {
		return k, nil
	}
	raw, err := s.readTyped(tip, typeCommit)
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", knowledgeRef, tip, err)
	}
	c, err := object.ParseCommit(raw)
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", knowledgeRef, tip, err)
	}
	k.when = committerTime(raw)
	if k.root, _, err = s.readTreeBytes(c.Tree); err != nil {
		return nil, err
	}
	return k, nil
}

// knowledgeFolder returns a folder of the zone ("patterns", "notes"), empty
// if absent.
func (s *Store) knowledgeFolder(k *knowledgeTip, name string) (*object.Tree, error) {
	e, ok := k.root.Get(name)
	if !ok {
		return &object.Tree{}, nil
	}
	if !e.Dir {
		return nil, fmt.Errorf("%s: %s is a file, expected a folder", knowledgeRef, name)
	}
	t, _, err := s.readTreeBytes(e.ID)
	return t, err
}

// ListKnowledge implements ledger.KnowledgeStore. Files whose names are not
// "<id>.md" with a valid id (a README, say) are not entries and are
// skipped.
func (s *Store) ListKnowledge(ctx context.Context, kind ledger.KnowledgeKind) ([]ledger.KnowledgeEntry, error) {
	name, err := knowledgeDir(kind)
	if err != nil {
		return nil, err
	}
	k, err := s.readKnowledgeTip()
	if err != nil {
		return nil, err
	}
	dir, err := s.knowledgeFolder(k, name)
	if err != nil {
		return nil, err
	}
	var out []ledger.KnowledgeEntry
	for _, e := range dir.Entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id, ok := strings.CutSuffix(e.Name, ".md")
		if e.Dir || !ok || !ledger.ValidKnowledgeID(id) {
			continue
		}
		data, err := s.readBlob(e.ID)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", name, e.Name, err)
		}
		out = append(out, knowledgeEntry(kind, id, e.ID, data, k.when))
	}
	return out, nil
}

// ReadKnowledge implements ledger.KnowledgeStore.
func (s *Store) ReadKnowledge(_ context.Context, kind ledger.KnowledgeKind, id string) (ledger.KnowledgeEntry, error) {
	name, err := knowledgeDir(kind)
	if err != nil {
		return ledger.KnowledgeEntry{}, err
	}
	if !ledger.ValidKnowledgeID(id) {
		return ledger.KnowledgeEntry{}, fmt.Errorf("%s id %q: %w", kind, id, ledger.ErrKnowledgeNotFound)
	}
	k, err := s.readKnowledgeTip()
	if err != nil {
		return ledger.KnowledgeEntry{}, err
	}
	dir, err := s.knowledgeFolder(k, name)
	if err != nil {
		return ledger.KnowledgeEntry{}, err
	}
	e, ok := dir.Get(id + ".md")
	if !ok || e.Dir {
		return ledger.KnowledgeEntry{}, fmt.Errorf("%s %q: %w", kind, id, ledger.ErrKnowledgeNotFound)
	}
	data, err := s.readBlob(e.ID)
	if err != nil {
		return ledger.KnowledgeEntry{}, fmt.Errorf("%s/%s: %w", name, e.Name, err)
	}
	return knowledgeEntry(kind, id, e.ID, data, k.when), nil
}

// knowledgeEntry decodes a file. The file name gives the id (an id in the
// front matter that disagrees is ignored: the name is what addresses the
// entry); missing dates fall back to the zone's latest commit, the latest
// the file can have changed.
func knowledgeEntry(kind ledger.KnowledgeKind, id string, blob hash, data []byte, fallback time.Time) ledger.KnowledgeEntry {
	e := parseKnowledge(data)
	e.Kind, e.ID, e.Version = kind, id, ledger.KnowledgeVersion(blob.String())
	if e.CreatedAt.IsZero() {
		e.CreatedAt = e.UpdatedAt
	}
	if e.UpdatedAt.IsZero() {
		e.UpdatedAt = e.CreatedAt
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt, e.UpdatedAt = fallback, fallback
	}
	if kind == ledger.KindNote {
		e.Description, e.Tags, e.DerivedFromSessions, e.CreatedBy = "", nil, nil, ""
	}
	return e
}

// WriteKnowledge implements ledger.KnowledgeStore: one commit on
// refs/heads/knowledge, moved by compare-and-swap from the tip it was built
// on. Losing the swap means another writer committed first, possibly to
// another entry; the write is then rebuilt on the new tip, and refused with
// ErrKnowledgeChanged only if its own entry changed.
func (s *Store) WriteKnowledge(ctx context.Context, w ledger.KnowledgeWrite) (ledger.KnowledgeVersion, error) {
	e := w.Entry
	dirName, err := knowledgeDir(e.Kind)
	if err != nil {
		return "", err
	}
	if !ledger.ValidKnowledgeID(e.ID) {
		return "", fmt.Errorf("%s id %q: expected ^[a-z0-9-]+$", e.Kind, e.ID)
	}
	fileName := e.ID + ".md"
	var file []byte
	var blob hash
	if !w.Delete {
		file = encodeKnowledge(e)
		blob = object.HashObject(typeBlob, file)
	}
	when := w.When
	if when.IsZero() {
		when = time.Now()
	}
	for attempt := 1; ; attempt++ {
		k, err := s.readKnowledgeTip()
		if err != nil {
			return "", err
		}
		dir, err := s.knowledgeFolder(k, dirName)
		if err != nil {
			return "", err
		}
		cur, exists := dir.Get(fileName)
		var curVersion ledger.KnowledgeVersion
		if exists {
			curVersion = ledger.KnowledgeVersion(cur.ID.String())
		}
		if curVersion != w.Expected {
			return "", fmt.Errorf("%s %s is at version %q, not %q: %w", e.Kind, e.ID, curVersion, w.Expected, ledger.ErrKnowledgeChanged)
		}
		if w.Delete && !exists {
			return "", fmt.Errorf("%s %q: %w", e.Kind, e.ID, ledger.ErrKnowledgeNotFound)
		}

		b := &batch{}
		if w.Delete {
			removeEntry(dir, fileName)
		} else {
			b.objects = append(b.objects, logObject{id: blob, typ: typeBlob, data: file})
			dir.Set(object.TreeEntry{Name: fileName, ID: blob})
		}
		// Git keeps no empty folders: the last note deleted takes notes/
		// with it.
		if len(dir.Entries) == 0 {
			removeEntry(k.root, dirName)
		} else {
			db := dir.Encode()
			did := object.HashObject(typeTree, db)
			b.objects = append(b.objects, logObject{id: did, typ: typeTree, data: db})
			k.root.Set(object.TreeEntry{Name: dirName, Dir: true, ID: did})
		}
		b.commitRoot(knowledgeRef, k.tip, k.root, knowledgeMessage(w, exists), w.Author, when)

		err = s.be.apply(ctx, b)
		if errors.Is(err, errConflict) && attempt < maxKnowledgeAttempts {
			// A random pause, so that writers racing for the ref do not
			// collide again in step.
			pause := time.Duration(rand.Int64N(int64(min(attempt, 10)) * int64(time.Millisecond)))
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			continue
		}
		if errors.Is(err, errConflict) {
			return "", fmt.Errorf("%s kept moving under %d attempts: %w", knowledgeRef, attempt, ledger.ErrKnowledgeChanged)
		}
		if err != nil {
			return "", err
		}
		if w.Delete {
			return "", nil
		}
		return ledger.KnowledgeVersion(blob.String()), nil
	}
}

// commitRoot adds to b the root tree, a commit of it on parent (zeroHash:
// none) authored by author and committed by thoughtbox, and the
// compare-and-swap moving ref from parent to that commit, which it returns.
// The zones kept on their own refs (knowledge, notebooks) commit through
// it.
func (b *batch) commitRoot(ref string, parent hash, root *object.Tree, message string, author ledger.Author, when time.Time) hash {
	rb := root.Encode()
	rid := object.HashObject(typeTree, rb)
	b.objects = append(b.objects, logObject{id: rid, typ: typeTree, data: rb})
	c := &object.Commit{Tree: rid, Message: message,
		Author:    sig(author, when),
		Committer: object.Signature{Name: committerName, Email: committerEmail, When: when.UTC()}}
	if parent != zeroHash {
		c.Parents = []hash{parent}
	}
	cb := c.Encode()
	cid := object.HashObject(typeCommit, cb)
	b.objects = append(b.objects, logObject{id: cid, typ: typeCommit, data: cb})
	b.updates = append(b.updates, refUpdate{name: ref, old: parent, new: cid})
	return cid
}

func removeEntry(t *object.Tree, name string) {
	if i, ok := t.Find(name); ok {
		t.Entries = slices.Delete(t.Entries, i, i+1)
	}
}

// knowledgeMessage is "Create pattern <id>: <title>" (or Update, Delete),
// the description as body, and the Thoughtbox-Knowledge trailer.
func knowledgeMessage(w ledger.KnowledgeWrite, existed bool) string {
	e := w.Entry
	verb := "Create"
	switch {
	case w.Delete:
		verb = "Delete"
	case existed:
		verb = "Update"
	}
	subject := fmt.Sprintf("%s %s %s", verb, e.Kind, e.ID)
	if t := firstLine(e.Title, 72); t != "" {
		subject += ": " + t
	}
	var m strings.Builder
	m.WriteString(firstLine(subject, 100) + "\n")
	if d := strings.TrimSpace(e.Description); d != "" && !w.Delete {
		m.WriteString("\n" + d + "\n")
	}
	fmt.Fprintf(&m, "\nThoughtbox-Knowledge: %s/%s\n", e.Kind, e.ID)
	return m.String()
}

// committerTime reads the committer date of a raw commit; zero if absent.
func committerTime(raw []byte) time.Time {
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if len(line) == 0 {
			break // end of the header
		}
		rest, ok := bytes.CutPrefix(line, []byte("committer "))
		if !ok {
			continue
		}
		f := strings.Fields(string(rest))
		if len(f) < 2 {
			return time.Time{}
		}
		sec, err := strconv.ParseInt(f[len(f)-2], 10, 64)
		if err != nil {
			return time.Time{}
		}
		return time.Unix(sec, 0).UTC()
	}
	return time.Time{}
}

// encodeKnowledge renders an entry as its file:
//
//	---
//	id: self-test-bisect-a-regression
//	title: "Self-test: bisect a regression"
//	description: Find the commit that broke a test by halving the range
//	tags: [self-test, debugging]
//	derivedFromSessions: []
//	createdBy: claude-code 1.0
//	createdAt: 2026-11-22T10:00:00Z
//	updatedAt: 2026-11-22T10:00:00Z
//	---
//
//	<content>
//
// The front matter is YAML that any YAML reader accepts: a value is written
// plain when that is unambiguous and otherwise as a JSON string (a YAML
// double-quoted scalar). A blank line follows the front matter and a
// newline ends the file; parseKnowledge removes exactly those, so the
// content comes back byte for byte. Notes have only id, title and dates.
func encodeKnowledge(e ledger.KnowledgeEntry) []byte {
	var b bytes.Buffer
	b.WriteString("---\n")
	field := func(key, value string) {
		b.WriteString(key + ": " + yamlScalar(value) + "\n")
	}
	list := func(key string, values []string) {
		b.WriteString(key + ": [")
		for i, v := range values {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(yamlScalar(v))
		}
		b.WriteString("]\n")
	}
	field("id", e.ID)
	field("title", e.Title)
	if e.Kind == ledger.KindPattern {
		field("description", e.Description)
		list("tags", e.Tags)
		list("derivedFromSessions", e.DerivedFromSessions)
		if e.CreatedBy != "" {
			field("createdBy", e.CreatedBy)
		}
	}
	b.WriteString("createdAt: " + e.CreatedAt.UTC().Format(time.RFC3339Nano) + "\n")
	b.WriteString("updatedAt: " + e.UpdatedAt.UTC().Format(time.RFC3339Nano) + "\n")
	b.WriteString("---\n\n")
	b.WriteString(e.Content)
	b.WriteString("\n")
	return b.Bytes()
}

// yamlScalar writes s plain when a YAML reader would read it back as the
// same string: it starts with a letter, holds only letters, digits, spaces
// and -_./()+ (no ": ", " #", commas or brackets, which YAML reads as
// structure), does not end in a space, and is not a YAML boolean or null.
// Anything else is double-quoted, with every character YAML does not allow
// raw (controls, DEL, C1, line and paragraph separators, BOM) escaped, so
// the result is both a JSON string and a YAML double-quoted scalar.
func yamlScalar(s string) string {
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

// parseKnowledge reads a knowledge file leniently, because people edit them
// by hand: front matter between "---" lines is optional (without it the
// whole file is content); keys may be written createdAt, created_at or
// created-at; values may be plain, 'single' or "double" quoted, lists
// [a, b] or "- item" lines or a comma-separated string, and text blocks
// "|" or ">"; unknown keys and lines it cannot read are ignored, and an
// unreadable date is left zero. It never fails.
func parseKnowledge(data []byte) ledger.KnowledgeEntry {
	var e ledger.KnowledgeEntry
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	fm, content, ok := splitFrontMatter(data)
	if !ok {
		e.Content = trimContent(data)
		return e
	}
	e.Content = trimContent(content)
	for _, kv := range parseFrontMatter(fm) {
		switch normalizeKey(kv.key) {
		case "title":
			e.Title = kv.scalar()
		case "description":
			e.Description = kv.scalar()
		case "tags":
			e.Tags = kv.list()
		case "derivedfromsessions":
			e.DerivedFromSessions = kv.list()
		case "createdby":
			e.CreatedBy = kv.scalar()
		case "createdat":
			e.CreatedAt = parseDate(kv.scalar())
		case "updatedat":
			e.UpdatedAt = parseDate(kv.scalar())
		}
	}
	return e
}

// splitFrontMatter finds front matter: a first line "---" and a later line
// "---" (or YAML's "..."). Without both there is none.
func splitFrontMatter(data []byte) (fm []byte, content []byte, ok bool) {
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

// trimContent removes the blank line after the front matter and the
// newline that ends the file, as encodeKnowledge adds them; a file edited
// on Windows may have "\r\n" there instead.
func trimContent(b []byte) string {
	if bytes.HasPrefix(b, []byte("\n")) {
		b = b[1:]
	} else if bytes.HasPrefix(b, []byte("\r\n")) {
		b = b[2:]
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	return string(b)
}

func normalizeKey(k string) string {
	return strings.ToLower(strings.NewReplacer("_", "", "-", "", " ", "").Replace(k))
}

// fmValue is one key of the front matter with what was written for it.
type fmValue struct {
	key string
	// inline is the text after "key:", trimmed; block holds the lines
	// below it that belong to it (a "- item" list, an indented text).
	inline string
	block  []string
}

func parseFrontMatter(fm []byte) []fmValue {
	var out []fmValue
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
		v := fmValue{key: strings.Trim(key, " \t\"'"), inline: strings.TrimSpace(value)}
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

// scalar reads the value as one string.
func (v fmValue) scalar() string {
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
func (v fmValue) joined() string {
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

// list reads the value as a list of strings.
func (v fmValue) list() []string {
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
		for _, item := range strings.Split(fmValue{inline: s, block: v.block}.scalar(), ",") {
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

// parseDate accepts RFC 3339 and the shorter forms people type.
func parseDate(s string) time.Time {
	s = strings.Trim(s, `"' `)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
