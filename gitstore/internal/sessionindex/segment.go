// Package sessionindex keeps what listing and searching a ledger's
// sessions need — each session's summary, and which words its title,
// description, tags and thoughts hold — so that a page or a query is
// answered without reading every session from Git. It is kept on disk, so
// that a new process starts warm, or for a repository in memory in memory
// (OpenMemory): the same segments and the same code either way, so both
// storages list and search alike.
//
// The index is derived data and never trusted over the repository: every
// record carries the key of the refs it was read from (Key), and a caller
// hands View the sessions as the repository holds them now. A record whose
// key no longer matches is ignored (its session is read again), a record
// of a session the repository no longer has is never answered, and a
// segment file that is damaged is deleted and its sessions read again.
//
// Records are kept in immutable segment files, each written whole under a
// temporary name and renamed. New records go into a new small segment;
// when there are too many, the small ones are merged (and, once they add
// up to half the largest, everything is), which also drops the records
// that no longer match. Which segment holds a session does not matter —
// only whether its key matches — so processes sharing a repository may
// write and merge segments at the same time without any lock.
package sessionindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"sort"
	"time"
)

// Key identifies the exact state of a session's refs.
type Key [20]byte

// Where a word occurs in a session's metadata (Term.Fields).
const (
	InTitle uint8 = 1 << iota
	InDescription
	InTag
)

// Term is what one session holds of one word.
type Term struct {
	Fields uint8  // InTitle, InDescription, InTag
	Count  uint32 // thoughts that contain the word
}

// Summary is what a listing shows of one session. The package keeps its
// own record rather than the ledger's type so that the storage engine's
// internals never depend on the domain; gitstore converts between them.
type Summary struct {
	Title         string
	Description   string
	Tags          []string
	PartitionPath string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Thoughts      int
	Branches      int
}

// Doc is one session's record.
type Doc struct {
	ID      string
	Key     Key
	Summary Summary
	// Terms is nil for a record made for listing (from the session's
	// manifest only); search needs a record with its words.
	Terms map[string]Term
}

// A segment file:
//
//	magic        "TBIDX01\n"
//	docs         per session, by id: id, key, flags, updatedAt, summary
//	dictionary   per word, sorted: word, postings (doc delta, fields, count)
//	word index   uint32 offset of each word's entry, for binary search
//	footer       offsets and counts (5 × uint64), CRC-32C of the magic and
//	             docs, CRC-32C of the dictionary and word index, "TBX1"
//
// Integers are uvarints unless the footer says otherwise; strings are a
// uvarint length and the bytes. Listing reads only the magic and docs; a
// search reads the dictionary too; each part is checked when read.
var magic = []byte("TBIDX01\n")

const footerLen = 5*8 + 4 + 4 + 4

var footerMagic = []byte("TBX1")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errDamaged is a segment that is cut short or does not check out.
var errDamaged = errors.New("damaged index segment")

const flagTerms = 1

// docEntry is a record as the doc table holds it; its slices point into
// the segment's bytes.
type docEntry struct {
	id      []byte
	key     Key
	flags   byte
	updated int64
	sum     []byte
}

type segment struct {
	name string // file name; "" until written
	// data is the whole segment when it was made in this process; f the
	// open file otherwise, from which the dictionary is read when first
	// needed.
	data []byte
	f    *os.File
	docs []docEntry
	// The dictionary and word index: their place in the file, their
	// checksum, and once read, their bytes.
	dictOff, idxOff, end int64
	dictSum              uint32
	dictRead             bool
	dict                 []byte
	words                []byte
	nterm                int
}

type posting struct {
	doc    uint32
	fields uint8
	count  uint32
}

// encDoc is a record on its way into a segment.
type encDoc struct {
	id      string
	key     Key
	flags   byte
	updated int64
	sum     []byte
}

// encode makes a segment of docs (sorted by id, unique) and their words'
// postings (doc indexes into docs, in increasing order).
func encode(docs []encDoc, terms map[string][]posting) []byte {
	b := append([]byte{}, magic...)
	docsOff := len(b)
	for _, d := range docs {
		b = binary.AppendUvarint(b, uint64(len(d.id)))
		b = append(b, d.id...)
		b = append(b, d.key[:]...)
		b = append(b, d.flags)
		b = binary.AppendVarint(b, d.updated)
		b = binary.AppendUvarint(b, uint64(len(d.sum)))
		b = append(b, d.sum...)
	}
	dictOff := len(b)
	words := make([]string, 0, len(terms))
	for w := range terms {
		words = append(words, w)
	}
	sort.Strings(words)
	offs := make([]uint32, len(words))
	for i, w := range words {
		offs[i] = uint32(len(b) - dictOff)
		b = binary.AppendUvarint(b, uint64(len(w)))
		b = append(b, w...)
		ps := terms[w]
		b = binary.AppendUvarint(b, uint64(len(ps)))
		prev := uint32(0)
		for _, p := range ps {
			b = binary.AppendUvarint(b, uint64(p.doc-prev))
			prev = p.doc
			b = append(b, p.fields)
			b = binary.AppendUvarint(b, uint64(p.count))
		}
	}
	idxOff := len(b)
	for _, o := range offs {
		b = binary.LittleEndian.AppendUint32(b, o)
	}
	end := len(b)
	for _, v := range []int{docsOff, len(docs), dictOff, idxOff, len(words)} {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[:dictOff], castagnoli))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[dictOff:end], castagnoli))
	return append(b, footerMagic...)
}

// footer reads and checks a segment's footer against its size.
func (s *segment) footer(f []byte, size int64) (docsOff, ndocs uint64, docSum uint32, err error) {
	if len(f) != footerLen || !bytes.Equal(f[footerLen-4:], footerMagic) {
		return 0, 0, 0, errDamaged
	}
	var v [5]uint64
	for i := range v {
		v[i] = binary.LittleEndian.Uint64(f[8*i:])
	}
	end := uint64(size - footerLen)
	docsOff, ndocs, dictOff, idxOff, nterm := v[0], v[1], v[2], v[3], v[4]
	if docsOff != uint64(len(magic)) || docsOff > dictOff || dictOff > idxOff || nterm > end || idxOff+4*nterm != end || ndocs > end {
		return 0, 0, 0, errDamaged
	}
	s.dictOff, s.idxOff, s.end, s.nterm = int64(dictOff), int64(idxOff), int64(end), int(nterm)
	s.dictSum = binary.LittleEndian.Uint32(f[44:48])
	return docsOff, ndocs, binary.LittleEndian.Uint32(f[40:44]), nil
}

// parse checks a segment made in this process and reads its doc table.
func parse(data []byte) (*segment, error) {
	s := &segment{data: data}
	if len(data) < len(magic)+footerLen {
		return nil, errDamaged
	}
	_, ndocs, docSum, err := s.footer(data[len(data)-footerLen:], int64(len(data)))
	if err != nil {
		return nil, err
	}
	if err := s.readDocs(data[:s.dictOff], ndocs, docSum); err != nil {
		return nil, err
	}
	return s, s.loadDict()
}

// openSegment reads a segment file's doc table; the dictionary is read
// when a search first needs it. The file stays open until close, so that
// a merge in another process that removes it does not take it away.
func openSegment(path string) (*segment, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	s, err := readSegment(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

func readSegment(f *os.File) (*segment, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	if size < int64(len(magic)+footerLen) {
		return nil, errDamaged
	}
	s := &segment{f: f}
	foot := make([]byte, footerLen)
	if _, err := f.ReadAt(foot, size-footerLen); err != nil {
		return nil, errDamaged
	}
	_, ndocs, docSum, err := s.footer(foot, size)
	if err != nil {
		return nil, err
	}
	head := make([]byte, s.dictOff)
	if _, err := f.ReadAt(head, 0); err != nil {
		return nil, errDamaged
	}
	if err := s.readDocs(head, ndocs, docSum); err != nil {
		return nil, err
	}
	return s, nil
}

// readDocs checks the magic and the doc table and decodes the table.
func (s *segment) readDocs(head []byte, ndocs uint64, sum uint32) error {
	if !bytes.Equal(head[:len(magic)], magic) || crc32.Checksum(head, castagnoli) != sum {
		return errDamaged
	}
	r := reader{b: head[len(magic):]}
	s.docs = make([]docEntry, 0, ndocs)
	for range ndocs {
		var d docEntry
		d.id = r.bytes()
		copy(d.key[:], r.next(len(d.key)))
		if fl := r.next(1); len(fl) == 1 {
			d.flags = fl[0]
		}
		d.updated = r.varint()
		d.sum = r.bytes()
		if r.bad {
			return errDamaged
		}
		s.docs = append(s.docs, d)
	}
	if len(r.b) != 0 {
		return errDamaged
	}
	return nil
}

// loadDict reads and checks the dictionary and word index.
func (s *segment) loadDict() error {
	if s.dictRead {
		return nil
	}
	var b []byte
	if s.data != nil {
		b = s.data[s.dictOff:s.end]
	} else {
		b = make([]byte, s.end-s.dictOff)
		if _, err := s.f.ReadAt(b, s.dictOff); err != nil {
			return errDamaged
		}
	}
	if crc32.Checksum(b, castagnoli) != s.dictSum {
		return errDamaged
	}
	s.dict, s.words = b[:s.idxOff-s.dictOff], b[s.idxOff-s.dictOff:]
	s.dictRead = true
	return nil
}

func (s *segment) close() {
	if s.f != nil {
		s.f.Close()
	}
}

// lookup returns the postings of word, or nil.
func (s *segment) lookup(word string) ([]posting, error) {
	if err := s.loadDict(); err != nil {
		return nil, err
	}
	entry := func(i int) []byte {
		off := binary.LittleEndian.Uint32(s.words[4*i:])
		if int(off) >= len(s.dict) {
			return nil
		}
		return s.dict[off:]
	}
	bad := false
	i := sort.Search(s.nterm, func(i int) bool {
		r := reader{b: entry(i)}
		w := r.bytes()
		bad = bad || r.bad
		return string(w) >= word
	})
	if bad {
		return nil, errDamaged
	}
	if i == s.nterm {
		return nil, nil
	}
	r := reader{b: entry(i)}
	if string(r.bytes()) != word {
		return nil, nil
	}
	n := r.uvarint()
	if n > uint64(len(s.docs)) {
		return nil, errDamaged
	}
	out := make([]posting, 0, n)
	doc := uint64(0)
	for range n {
		doc += r.uvarint()
		var p posting
		if fl := r.next(1); len(fl) == 1 {
			p.fields = fl[0]
		}
		p.count = uint32(r.uvarint())
		p.doc = uint32(doc)
		if r.bad || doc >= uint64(len(s.docs)) {
			return nil, errDamaged
		}
		out = append(out, p)
	}
	return out, nil
}

// eachWord calls fn with every word and its postings (for merging).
func (s *segment) eachWord(fn func(word string, ps []posting)) error {
	if err := s.loadDict(); err != nil {
		return err
	}
	for i := range s.nterm {
		off := binary.LittleEndian.Uint32(s.words[4*i:])
		if int(off) >= len(s.dict) {
			return errDamaged
		}
		r := reader{b: s.dict[off:]}
		w := string(r.bytes())
		if r.bad {
			return errDamaged
		}
		ps, err := s.lookup(w)
		if err != nil {
			return err
		}
		fn(w, ps)
	}
	return nil
}

type reader struct {
	b   []byte
	bad bool
}

// fail marks the segment damaged and stops every later read, so a caller
// checks bad once, after decoding, rather than after each field.
func (r *reader) fail() {
	r.bad = true
	r.b = nil
}

func (r *reader) next(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.fail()
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		r.fail()
		return nil
	}
	return r.next(int(n))
}

func (r *reader) string() string { return string(r.bytes()) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, t time.Time) []byte {
	b = binary.AppendVarint(b, t.Unix())
	return binary.AppendUvarint(b, uint64(t.Nanosecond()))
}

func (r *reader) time() time.Time {
	sec := r.varint()
	nsec := r.uvarint()
	return time.Unix(sec, int64(nsec)).UTC()
}

func encodeSummary(s Summary) []byte {
	var b []byte
	b = appendString(b, s.Title)
	b = appendString(b, s.Description)
	b = appendString(b, s.PartitionPath)
	b = binary.AppendUvarint(b, uint64(len(s.Tags)))
	for _, t := range s.Tags {
		b = appendString(b, t)
	}
	b = appendTime(b, s.CreatedAt)
	b = appendTime(b, s.UpdatedAt)
	b = binary.AppendUvarint(b, uint64(s.Thoughts))
	return binary.AppendUvarint(b, uint64(s.Branches))
}

func decodeSummary(data []byte) (Summary, error) {
	r := reader{b: data}
	var s Summary
	s.Title = r.string()
	s.Description = r.string()
	s.PartitionPath = r.string()
	n := r.uvarint()
	if n > uint64(len(data)) {
		return s, errDamaged
	}
	s.Tags = make([]string, 0, n)
	for range n {
		s.Tags = append(s.Tags, r.string())
	}
	s.CreatedAt = r.time()
	s.UpdatedAt = r.time()
	s.Thoughts = int(r.uvarint())
	s.Branches = int(r.uvarint())
	if r.bad || len(r.b) != 0 {
		return s, errDamaged
	}
	return s, nil
}

// updatedKey orders sessions by updatedAt; zero times sort first.
func updatedKey(t time.Time) int64 {
	if t.IsZero() {
		return -1 << 63
	}
	return t.UnixNano()
}
