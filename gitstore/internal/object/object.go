// Package object encodes and decodes the Git objects the store writes:
// ids (SHA-1 over a typed header), trees kept sorted in memory and
// re-encoded as exact edits of their previous encoding, commits and their
// signatures. Every commit goes through Commit.Encode, so its sanitizers are
// the one place that keeps commits clean for `git fsck --strict`.
package object

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
)

// Type is a Git object type as it appears in object headers and packs.
type Type = plumbing.ObjectType

const (
	TypeCommit = plumbing.CommitObject
	TypeTree   = plumbing.TreeObject
	TypeBlob   = plumbing.BlobObject
)

// Hash is a Git object id (SHA-1).
type Hash = plumbing.Hash

// ErrNotFound is returned when an object (or a ref) does not exist, by
// every reader of objects: packs, the log's overlay, the store.
var ErrNotFound = errors.New("not found")

// ZeroHash is the zero object id: no object, an absent ref.
var ZeroHash Hash

// HashObject computes the Git object id of content of type t. We hash with
// crypto/sha1 directly: it is several times faster than go-git's
// collision-detecting hasher, and we only Hash content we produced ourselves.
func HashObject(t Type, content []byte) Hash {
	// The header is put together on the stack and the sum written into
	// the id: every thought hashes four or more objects, and the
	// conversions and the slice Sum(nil) returns were garbage each time.
	var hdr [32]byte
	h := sha1.New()
	h.Write(header(hdr[:0], t, len(content)))
	h.Write(content)
	var out Hash
	h.Sum(out[:0])
	return out
}

// TreeEntry is one entry of a Git tree.
type TreeEntry struct {
	Name string
	Dir  bool
	ID   Hash
	// dirty marks an entry added or changed since the tree was last
	// encoded; the others are copied from the previous encoding. prevLen
	// is the length of what a changed entry replaced there (0 when new).
	dirty   bool
	prevLen int
}

func (e TreeEntry) encodedLen() int {
	if e.Dir {
		return 6 + len(e.Name) + 1 + 20
	}
	return 7 + len(e.Name) + 1 + 20
}

func (e TreeEntry) appendTo(b []byte) []byte {
	if e.Dir {
		b = append(b, "40000 "...)
	} else {
		b = append(b, "100644 "...)
	}
	b = append(b, e.Name...)
	b = append(b, 0)
	return append(b, e.ID[:]...)
}

// sortKey orders entries as Git does: a tree sorts as if its name ended in '/'.
func (e TreeEntry) sortKey() string {
	if e.Dir {
		return e.Name + "/"
	}
	return e.Name
}

// Tree is a sorted list of entries, kept in memory so that adding one file to
// a session folder does not require reading the folder back.
type Tree struct {
	Entries []TreeEntry
}

func (t *Tree) Find(name string) (int, bool) {
	for _, k := range [2]string{name, name + "/"} {
		i := sort.Search(len(t.Entries), func(i int) bool { return t.Entries[i].sortKey() >= k })
		if i < len(t.Entries) && t.Entries[i].Name == name {
			return i, true
		}
	}
	return 0, false
}

// set adds or replaces an entry, keeping Git's order.
func (t *Tree) Set(e TreeEntry) {
	e.dirty = true
	if i, ok := t.Find(e.Name); ok {
		old := t.Entries[i]
		if old.ID == e.ID && old.Dir == e.Dir {
			return
		}
		if old.dirty {
			e.prevLen = old.prevLen
		} else {
			e.prevLen = old.encodedLen()
		}
		t.Entries[i] = e
		return
	}
	k := e.sortKey()
	i := sort.Search(len(t.Entries), func(i int) bool { return t.Entries[i].sortKey() >= k })
	t.Entries = append(t.Entries, TreeEntry{})
	copy(t.Entries[i+1:], t.Entries[i:])
	t.Entries[i] = e
}

func (t *Tree) Get(name string) (TreeEntry, bool) {
	if i, ok := t.Find(name); ok {
		return t.Entries[i], true
	}
	return TreeEntry{}, false
}

// encode renders the tree in Git's binary tree format.
func (t *Tree) Encode() []byte {
	n := 0
	for _, e := range t.Entries {
		n += e.encodedLen()
	}
	b := make([]byte, 0, n)
	for i := range t.Entries {
		b = t.Entries[i].appendTo(b)
		t.Entries[i].dirty, t.Entries[i].prevLen = false, 0
	}
	return b
}

// encodeFrom renders the tree as an edit of prev, its previous encoding:
// the entries changed since then are inserted and the rest copied. Because
// the change is known, no diff is needed, and the edit is exact.
func (t *Tree) EncodeFrom(prev []byte) ([]byte, delta.Edit) { return t.EncodeFromInto(nil, prev) }

// encodeFromInto is encodeFrom writing into dst's storage when it is large
// enough; dst must not overlap prev.
func (t *Tree) EncodeFromInto(dst, prev []byte) ([]byte, delta.Edit) {
	// The changed entries are encoded into one buffer and each run of
	// them inserted as one slice of it, each run of the others copied as
	// one range: a thought changes two or three entries of a folder that
	// may hold thousands.
	// The edit is kept in the logged batch until the flush, so neither
	// its ops nor the inserted bytes are given room to spare: with room
	// for six ops and four entries, a server with 64 agents over HTTP
	// was at times over 100 MB resident, and without that room never
	// (BENCHMARKS.md, "Tuning: what each trick was measured to buy").
	var ed delta.Edit
	var ins []byte
	off := 0            // position in prev
	run, runLen := 0, 0 // the copy run under way: start, length
	insFrom := -1       // where the insert run under way starts in ins
	flushIns := func() {
		if insFrom >= 0 {
			ed.Insert(ins[insFrom:len(ins):len(ins)])
			insFrom = -1
		}
	}
	for i := range t.Entries {
		e := &t.Entries[i]
		if e.dirty {
			if runLen > 0 {
				ed.Copy(run, runLen)
				runLen = 0
			}
			if insFrom < 0 {
				if ins == nil {
					ins = make([]byte, 0, e.encodedLen())
				}
				insFrom = len(ins)
			}
			ins = e.appendTo(ins)
			off += e.prevLen
			e.dirty, e.prevLen = false, 0
			continue
		}
		flushIns()
		if runLen == 0 {
			run = off
		}
		n := e.encodedLen()
		runLen += n
		off += n
	}
	if runLen > 0 {
		ed.Copy(run, runLen)
	}
	flushIns()
	out, err := ed.ApplyInto(dst, prev)
	if err != nil || off != len(prev) {
		// The tracking disagrees with prev (it should not): fall back to a
		// full encoding, which is always right.
		full := t.Encode()
		return full, delta.Diff(prev, full).Detached()
	}
	return out, ed
}

// ParseTree decodes Git's binary tree format.
func ParseTree(data []byte) (*Tree, error) {
	t := &Tree{}
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return nil, fmt.Errorf("tree entry without mode")
		}
		mode := string(data[:sp])
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul < 0 || len(data) < nul+1+20 {
			return nil, fmt.Errorf("truncated tree entry")
		}
		e := TreeEntry{Name: string(data[:nul]), Dir: mode == "40000" || mode == "040000"}
		copy(e.ID[:], data[nul+1:nul+21])
		data = data[nul+21:]
		t.Entries = append(t.Entries, e)
	}
	return t, nil
}

// Signature is a commit author or committer.
type Signature struct {
	Name, Email string
	When        time.Time
}

// appendTo appends the signature as a commit header line's value: name,
// address, seconds since the epoch and the zone's offset. name and email
// are the cleaned ones.
func (s Signature) appendTo(b []byte, name, email string) []byte {
	if name == "" {
		name = "unknown"
	}
	b = append(b, name...)
	b = append(b, " <"...)
	b = append(b, email...)
	b = append(b, "> "...)
	b = strconv.AppendInt(b, s.When.Unix(), 10)
	_, off := s.When.Zone()
	sign := byte('+')
	if off < 0 {
		sign = '-'
		off = -off
	}
	h, m := off/3600, (off%3600)/60
	if h > 99 {
		// Not a zone Go makes; written as fmt's %02d wrote it.
		return fmt.Appendf(b, " %c%02d%02d", sign, h, m)
	}
	return append(b, ' ', sign, byte('0'+h/10), byte('0'+h%10), byte('0'+m/10), byte('0'+m%10))
}

// Commit is the part of a Git Commit that Thoughtbox writes.
type Commit struct {
	Tree      Hash
	Parents   []Hash
	Author    Signature
	Committer Signature
	Message   string
}

func (c *Commit) Encode() []byte {
	// Written into one buffer of the right size: every thought encodes a
	// commit, and a growing bytes.Buffer, hex strings and fmt were a tenth
	// of the builder's garbage.
	an, ae := cleanIdent(c.Author.Name), cleanIdent(c.Author.Email)
	cn, ce := cleanIdent(c.Committer.Name), cleanIdent(c.Committer.Email)
	msg := cleanMessage(c.Message)
	const sigLen = len("unknown") + len(" <> ") + 20 + len(" +0000") + 16
	b := make([]byte, 0, len("tree \n")+40+len(c.Parents)*(len("parent \n")+40)+
		len("author \n")+len(an)+len(ae)+sigLen+len("committer \n\n")+len(cn)+len(ce)+sigLen+len(msg))
	b = append(b, "tree "...)
	b = hex.AppendEncode(b, c.Tree[:])
	b = append(b, '\n')
	for _, p := range c.Parents {
		b = append(b, "parent "...)
		b = hex.AppendEncode(b, p[:])
		b = append(b, '\n')
	}
	b = append(b, "author "...)
	b = c.Author.appendTo(b, an, ae)
	b = append(b, "\ncommitter "...)
	b = c.Committer.appendTo(b, cn, ce)
	b = append(b, "\n\n"...)
	return append(b, msg...)
}

// Every commit goes through commit.encode, so these two sanitizers are the
// one place that keeps commits clean for `git fsck --strict` whatever an
// agent wrote or called itself. The thought files keep the exact text.

// cleanMessage makes a commit message safe for Git: a NUL byte (nulInCommit
// for fsck, and the end of the message for much of Git) becomes U+FFFD, and
// so does each byte of invalid UTF-8, so the log reads the same everywhere.
func cleanMessage(m string) string {
	if strings.IndexByte(m, 0) < 0 && utf8.ValidString(m) {
		return m
	}
	m = strings.ToValidUTF8(m, "\uFFFD")
	return strings.ReplaceAll(m, "\x00", "\uFFFD")
}

// cleanIdent makes a name or an e-mail address safe inside an ident line
// ("name <email> date zone"): angle brackets, which delimit the address,
// are dropped; control characters (NUL, newlines, ...) and invalid UTF-8
// become spaces and runs of spaces one space; the ends are trimmed.
func cleanIdent(s string) string {
	clean := utf8.ValidString(s)
	for i := 0; clean && i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == '<' || c == '>' || (c == ' ' && (i == 0 || i == len(s)-1 || s[i-1] == ' ')) {
			clean = false
		}
	}
	if clean && !strings.ContainsRune(s, 0x85) && !strings.ContainsRune(s, 0x2028) {
		return s
	}
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(s, " ") {
		switch {
		case r == '<' || r == '>':
			continue
		case r == ' ' || unicode.IsControl(r) || r == 0x2028 || r == 0x2029 || r == utf8.RuneError:
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ParsedCommit holds what the store reads back from a commit.
type ParsedCommit struct {
	Tree    Hash
	Parents []Hash
	Message string
}

func ParseCommit(data []byte) (*ParsedCommit, error) {
	c := &ParsedCommit{}
	for {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("truncated commit header")
		}
		line := data[:nl]
		data = data[nl+1:]
		if len(line) == 0 {
			c.Message = string(data)
			break
		}
		switch {
		case bytes.HasPrefix(line, []byte("tree ")):
			h, err := ParseHash(string(line[5:]))
			if err != nil {
				return nil, err
			}
			c.Tree = h
		case bytes.HasPrefix(line, []byte("parent ")):
			h, err := ParseHash(string(line[7:]))
			if err != nil {
				return nil, err
			}
			c.Parents = append(c.Parents, h)
		}
	}
	if c.Tree == ZeroHash {
		return nil, fmt.Errorf("commit without tree")
	}
	return c, nil
}

func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 40 {
		return h, fmt.Errorf("invalid object id %q", s)
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("invalid object id %q", s)
	}
	return h, nil
}

// header appends Git's object header ("blob 123\x00") to b.
func header(b []byte, t Type, size int) []byte {
	b = append(b, t.String()...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(size), 10)
	return append(b, 0)
}
