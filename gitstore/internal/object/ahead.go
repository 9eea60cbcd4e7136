package object

import (
	"bytes"
	"crypto/sha1"
	"hash"
	"sort"
	"strconv"
)

// Ahead is the SHA-1 of an object's id begun before the object exists:
// Git's header and the first bytes of its content, hashed while nothing
// waits for them, so that when the object is built only the rest is
// hashed. A session's folder tree and manifest grow by an entry a thought
// and are hashed whole every time (the header holds the length, so no
// state carries over from the version before); the part that does not
// change, all but their last entries, can be hashed between two calls,
// once the next version's length is foreseen.
//
// The prefix is taken from a version of the object (base): Finish uses
// the hash only for content of the foreseen length whose first bytes are
// that version's, so a wrong guess costs the hashing done ahead and
// nothing else.
//
// The zero Ahead holds nothing begun; one is used again and again, for
// one version at a time.
type Ahead struct {
	t     Type
	base  Hash
	size  int
	n     int
	h     hash.Hash
	begun bool
	used  bool
}

// minAhead is the shortest prefix worth hashing ahead: below it, what a
// build saves is less than what checking the guess costs.
const minAhead = 1024

// Begin begins the id of an object of type t and size bytes whose
// content will start with prefix, taken from the version base. A prefix
// shorter than minAhead is not worth it: then nothing is begun.
func (a *Ahead) Begin(t Type, size int, base Hash, prefix []byte) {
	a.begun, a.used = false, false
	if len(prefix) < minAhead {
		return
	}
	if a.h == nil {
		a.h = sha1.New()
	} else {
		a.h.Reset()
	}
	var hdr [32]byte
	a.h.Write(header(hdr[:0], t, size))
	a.h.Write(prefix)
	a.t, a.base, a.size, a.n, a.begun = t, base, size, len(prefix), true
}

// Drop forgets what was begun.
func (a *Ahead) Drop() { a.begun = false }

// Finish returns the id of content, an object of type t built from the
// version base whose bytes are prev, when a is the hash begun for it: ok
// is false (and the caller hashes content whole) when nothing was begun,
// it was begun from another version, or content is not what was
// foreseen. What was begun is used up either way.
func (a *Ahead) Finish(t Type, content []byte, base Hash, prev []byte) (id Hash, ok bool) {
	if !a.begun {
		return id, false
	}
	a.begun = false
	if a.t != t || a.base != base || a.size != len(content) || a.n > len(prev) {
		return id, false
	}
	// The bytes hashed were prev's: they had the id base then, as they
	// do now, so they are the same bytes.
	if !bytes.Equal(content[:a.n], prev[:a.n]) {
		return id, false
	}
	a.h.Write(content[a.n:])
	a.h.Sum(id[:0])
	a.used = true

	return id, true
}

// header appends Git's object header ("blob 123\x00") to b.
func header(b []byte, t Type, size int) []byte {
	b = append(b, t.String()...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(size), 10)
	return append(b, 0)
}

// AheadOf begins in a the id of the tree's next version when that
// version will differ from enc, its encoding now (with the id id), in the
// ids of the entries named in changed and by one file called added ("":
// none): every entry before the first of these is hashed now. Nothing is
// begun when added is already there. The entries are taken to be what
// enc encodes; if they are not (the tree was changed since), the guess
// fails in Finish.
func (t *Tree) AheadOf(a *Ahead, enc []byte, id Hash, changed []string, added string) {
	a.Drop()
	size := len(enc)
	first := len(t.Entries) // the first entry that changes or moves
	if added != "" {
		if _, ok := t.Find(added); ok {
			return
		}
		e := TreeEntry{Name: added}
		size += e.encodedLen()
		k := e.sortKey()
		first = sort.Search(len(t.Entries), func(i int) bool { return t.Entries[i].sortKey() >= k })
	}
	for _, name := range changed {
		if i, ok := t.Find(name); ok && i < first {
			first = i
		}
	}
	// The entries before first are at the start of enc, so their end is
	// enc's length less what the others take: a thought's file is added
	// near the end of its folder, and the folder's entries are many.
	end := len(enc)
	for i := first; i < len(t.Entries); i++ {
		end -= t.Entries[i].encodedLen()
	}
	if end < 0 {
		return
	}
	a.Begin(TypeTree, size, id, enc[:end])
}

// Used reports whether the last Finish took the hash begun: the guess
// was right.
func (a *Ahead) Used() bool { return a.used }

// Begun reports whether a hash is begun and not used up.
func (a *Ahead) Begun() bool { return a.begun }
