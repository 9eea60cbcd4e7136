// Package gitstore keeps Thoughtbox ledgers in Git repositories. It is the
// only package that imports go-git.
//
// Each session owns its refs (refs/heads/sessions/<id>/main and one
// refs/heads/sessions/<id>/branches/<branchId> per reasoning branch); every
// thought is one commit. Writes are made durable by a write-ahead log with a
// single fsync and reach the Git object store in packs a fraction of a second
// later; see doc/architecture.md for the whole write path.
package gitstore

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
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

// objType is a Git object type as it appears in object headers and packs.
type objType = plumbing.ObjectType

const (
	typeCommit = plumbing.CommitObject
	typeTree   = plumbing.TreeObject
	typeBlob   = plumbing.BlobObject
)

type hash = plumbing.Hash

var zeroHash hash

// hashObject computes the Git object id of content of type t. We hash with
// crypto/sha1 directly: it is several times faster than go-git's
// collision-detecting hasher, and we only hash content we produced ourselves.
func hashObject(t objType, content []byte) hash {
	h := sha1.New()
	h.Write([]byte(t.String()))
	h.Write([]byte{' '})
	h.Write([]byte(strconv.Itoa(len(content))))
	h.Write([]byte{0})
	h.Write(content)
	var out hash
	copy(out[:], h.Sum(nil))
	return out
}

// treeEntry is one entry of a Git tree.
type treeEntry struct {
	name string
	dir  bool
	id   hash
	// dirty marks an entry added or changed since the tree was last
	// encoded; the others are copied from the previous encoding. prevLen
	// is the length of what a changed entry replaced there (0 when new).
	dirty   bool
	prevLen int
}

func (e treeEntry) encodedLen() int {
	if e.dir {
		return 6 + len(e.name) + 1 + 20
	}
	return 7 + len(e.name) + 1 + 20
}

func (e treeEntry) appendTo(b []byte) []byte {
	if e.dir {
		b = append(b, "40000 "...)
	} else {
		b = append(b, "100644 "...)
	}
	b = append(b, e.name...)
	b = append(b, 0)
	return append(b, e.id[:]...)
}

// sortKey orders entries as Git does: a tree sorts as if its name ended in '/'.
func (e treeEntry) sortKey() string {
	if e.dir {
		return e.name + "/"
	}
	return e.name
}

// tree is a sorted list of entries, kept in memory so that adding one file to
// a session folder does not require reading the folder back.
type tree struct {
	entries []treeEntry
}

func (t *tree) find(name string) (int, bool) {
	for _, k := range [2]string{name, name + "/"} {
		i := sort.Search(len(t.entries), func(i int) bool { return t.entries[i].sortKey() >= k })
		if i < len(t.entries) && t.entries[i].name == name {
			return i, true
		}
	}
	return 0, false
}

// set adds or replaces an entry, keeping Git's order.
func (t *tree) set(e treeEntry) {
	e.dirty = true
	if i, ok := t.find(e.name); ok {
		old := t.entries[i]
		if old.id == e.id && old.dir == e.dir {
			return
		}
		if old.dirty {
			e.prevLen = old.prevLen
		} else {
			e.prevLen = old.encodedLen()
		}
		t.entries[i] = e
		return
	}
	k := e.sortKey()
	i := sort.Search(len(t.entries), func(i int) bool { return t.entries[i].sortKey() >= k })
	t.entries = append(t.entries, treeEntry{})
	copy(t.entries[i+1:], t.entries[i:])
	t.entries[i] = e
}

func (t *tree) get(name string) (treeEntry, bool) {
	if i, ok := t.find(name); ok {
		return t.entries[i], true
	}
	return treeEntry{}, false
}

// encode renders the tree in Git's binary tree format.
func (t *tree) encode() []byte {
	n := 0
	for _, e := range t.entries {
		n += e.encodedLen()
	}
	b := make([]byte, 0, n)
	for i := range t.entries {
		b = t.entries[i].appendTo(b)
		t.entries[i].dirty, t.entries[i].prevLen = false, 0
	}
	return b
}

// encodeFrom renders the tree as an edit of prev, its previous encoding:
// the entries changed since then are inserted and the rest copied. Because
// the change is known, no diff is needed, and the edit is exact.
func (t *tree) encodeFrom(prev []byte) ([]byte, delta.Edit) { return t.encodeFromInto(nil, prev) }

// encodeFromInto is encodeFrom writing into dst's storage when it is large
// enough; dst must not overlap prev.
func (t *tree) encodeFromInto(dst, prev []byte) ([]byte, delta.Edit) {
	var ed delta.Edit
	off := 0 // position in prev
	for i := range t.entries {
		e := &t.entries[i]
		if e.dirty {
			ed.Insert(e.appendTo(nil))
			off += e.prevLen
			e.dirty, e.prevLen = false, 0
			continue
		}
		n := e.encodedLen()
		ed.Copy(off, n)
		off += n
	}
	out, err := ed.ApplyInto(dst, prev)
	if err != nil || off != len(prev) {
		// The tracking disagrees with prev (it should not): fall back to a
		// full encoding, which is always right.
		full := t.encode()
		return full, delta.Diff(prev, full).Detached()
	}
	return out, ed
}

// parseTree decodes Git's binary tree format.
func parseTree(data []byte) (*tree, error) {
	t := &tree{}
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
		e := treeEntry{name: string(data[:nul]), dir: mode == "40000" || mode == "040000"}
		copy(e.id[:], data[nul+1:nul+21])
		data = data[nul+21:]
		t.entries = append(t.entries, e)
	}
	return t, nil
}

// signature is a commit author or committer.
type signature struct {
	name, email string
	when        time.Time
}

func (s signature) encode(b *bytes.Buffer) {
	name := cleanIdent(s.name)
	if name == "" {
		name = "unknown"
	}
	b.WriteString(name)
	b.WriteString(" <")
	b.WriteString(cleanIdent(s.email))
	b.WriteString("> ")
	b.WriteString(strconv.FormatInt(s.when.Unix(), 10))
	_, off := s.when.Zone()
	sign := '+'
	if off < 0 {
		sign = '-'
		off = -off
	}
	fmt.Fprintf(b, " %c%02d%02d", sign, off/3600, (off%3600)/60)
}

// commit is the part of a Git commit that Thoughtbox writes.
type commit struct {
	tree      hash
	parents   []hash
	author    signature
	committer signature
	message   string
}

func (c *commit) encode() []byte {
	var b bytes.Buffer
	b.WriteString("tree ")
	b.WriteString(c.tree.String())
	b.WriteByte('\n')
	for _, p := range c.parents {
		b.WriteString("parent ")
		b.WriteString(p.String())
		b.WriteByte('\n')
	}
	b.WriteString("author ")
	c.author.encode(&b)
	b.WriteByte('\n')
	b.WriteString("committer ")
	c.committer.encode(&b)
	b.WriteString("\n\n")
	b.WriteString(cleanMessage(c.message))
	return b.Bytes()
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

// parsedCommit holds what the store reads back from a commit.
type parsedCommit struct {
	tree    hash
	parents []hash
	message string
}

func parseCommit(data []byte) (*parsedCommit, error) {
	c := &parsedCommit{}
	for {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("truncated commit header")
		}
		line := data[:nl]
		data = data[nl+1:]
		if len(line) == 0 {
			c.message = string(data)
			break
		}
		switch {
		case bytes.HasPrefix(line, []byte("tree ")):
			h, err := parseHash(string(line[5:]))
			if err != nil {
				return nil, err
			}
			c.tree = h
		case bytes.HasPrefix(line, []byte("parent ")):
			h, err := parseHash(string(line[7:]))
			if err != nil {
				return nil, err
			}
			c.parents = append(c.parents, h)
		}
	}
	if c.tree == zeroHash {
		return nil, fmt.Errorf("commit without tree")
	}
	return c, nil
}

func parseHash(s string) (hash, error) {
	var h hash
	if len(s) != 40 {
		return h, fmt.Errorf("invalid object id %q", s)
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("invalid object id %q", s)
	}
	return h, nil
}
