package gitstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/access"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/chain"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/manifest"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/repo"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/sessionindex"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/sessionlock"
	"github.com/thoughtbox/thoughtbox/internal/durable"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// Granularity is how session folders are grouped by creation time; the
// rule is the ledger's (ledger.Granularity), named here too so that
// Options reads as before.
type Granularity = ledger.Granularity

// The partition granularities of seed 002.
const (
	Monthly = ledger.PartitionMonthly
	Weekly  = ledger.PartitionWeekly
	Daily   = ledger.PartitionDaily
	None    = ledger.PartitionNone
)

// ParseGranularity validates a granularity name ("" is monthly).
func ParseGranularity(s string) (Granularity, error) { return ledger.ParseGranularity(s) }

// Options configure a Store.
type Options struct {
	Partition Granularity
	// FlushInterval is how long a durable thought may wait in the log
	// before it is packed and its ref published to plain Git. Default
	// 100ms; while writers are busy the flusher stretches it up to 4×, so
	// that fewer, larger packs are written.
	FlushInterval time.Duration
	// LockTimeout is how long a writer waits for a lock another process
	// holds (the log, the flush, a session's chain) before it fails with
	// an error naming the holder. Default durable.DefaultTimeout (10s).
	// Readers never wait for another process.
	LockTimeout time.Duration
	// Logger receives what the store does in the background and cannot
	// return to a caller (a flush that failed and is retried); nil
	// discards it. The store never writes to the process's streams.
	Logger *slog.Logger
	// Layout says where the refs live: Standalone (the default) or InCode,
	// for a ledger kept in a code repository's own object store.
	Layout Layout
}

// Store is a ledger.Store kept in one Git repository.
type Store struct {
	be repo.Repo
	// disk and mem are be as what it is, a repository on disk or go-git's
	// memory storage (the other nil): what only one of them offers (git
	// directory, packs, staging, config) is asked of it here, never by
	// asserting be's type, so a Repo that wraps another cannot lose it
	// without a word.
	disk *repo.FS
	mem  *repo.Mem
	opts Options
	// lay spells the store's ref names (opts.Layout).
	lay Layout

	// mu guards chains; each chain.State has its own lock so that sessions
	// are written in parallel.
	mu     sync.Mutex
	chains map[string]*chain.State

	// branchRefs keeps the sessions' branch refs as last listed, for
	// main's manifest (branchlists.go).
	branchRefs branchRefCache
	// sessIndex keeps sessions' summaries and words, on disk or in
	// memory: see index.go.
	sessIndex *sessionindex.Index
	// access keeps the sessions' access times: in memory, and on disk
	// in thoughtbox/accessed.json and its journal.
	access *access.Times
	// sessionLocks are the sessions' inter-process locks, in
	// thoughtbox/locks (nil in memory, which no other process shares).
	sessionLocks *sessionlock.Set
}

// The one check that the store, on disk and in memory, has every part
// the ledger uses.
var _ ledger.Store = (*Store)(nil)

// Open opens (creating if needed) the bare repository at gitDir, recovering
// anything a crashed writer left in its log.
func Open(gitDir string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	be, err := repo.OpenFS(gitDir, repo.FSOptions{
		FlushEvery:     opts.FlushInterval,
		LockTimeout:    opts.LockTimeout,
		Logger:         opts.Logger,
		LockedRefRoots: opts.Layout.flusherRefRoots(),
		SharedWithGit:  opts.Layout == InCode,
		Damage:         storageError,
	})
	if err != nil {
		return nil, err
	}
	st, err := newStore(be, be, nil, opts)
	if err == nil {
		st.sessIndex = sessionindex.Open(filepath.Join(gitDir, "thoughtbox", "index"))
		// The whole-file summary cache of earlier versions; the index
		// replaces it.
		os.Remove(filepath.Join(gitDir, "thoughtbox", "summaries"))
		st.access = access.New(filepath.Join(gitDir, "thoughtbox", "accessed.json"))
		st.sessionLocks = sessionlock.New(filepath.Join(gitDir, "thoughtbox", "locks"), opts.LockTimeout)
		// Temporary packs of push and pull runs that were killed.
		pack.CleanTransferDir(st.tmpDir())
	}
	return st, err
}

// OpenMemory returns a Store on go-git's in-memory storage.
func OpenMemory(opts Options) (*Store, error) {
	mem := repo.NewMem(opts.Layout.sessions())
	st, err := newStore(mem, nil, mem, opts.withDefaults())
	if err == nil {
		st.sessIndex = sessionindex.OpenMemory()
	}
	return st, err
}

func (o Options) withDefaults() Options {
	if o.Partition == "" {
		o.Partition = Monthly
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = durable.DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func newStore(be repo.Repo, disk *repo.FS, mem *repo.Mem, opts Options) (*Store, error) {
	s := &Store{be: be, disk: disk, mem: mem, opts: opts, lay: opts.Layout, chains: map[string]*chain.State{}, access: access.New("")}
	if err := s.ensureReadme(context.Background()); err != nil {
		be.Close()
		return nil, err
	}
	return s, nil
}

// Flush publishes every acknowledged write to the refs and packs that plain
// Git reads. Writes are durable before this; it only shortens the wait.
func (s *Store) Flush() error { return s.be.Flush(context.Background()) }

// Close flushes and releases the repository.
func (s *Store) Close() error {
	if s.sessionLocks != nil {
		s.sessionLocks.Close()
	}
	s.access.Save()
	return s.be.Close()
}

// validSessionID keeps ids usable as ref and folder names.
func validSessionID(id string) error {
	if id == "" || len(id) > 128 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return fmt.Errorf("session id %q: expected lowercase letters, digits and hyphens", id)
	}
	return nil
}

// validBranchID is the ledger's rule (one pattern, one length limit): a
// ref the ledger could not have written is not read as a branch either.
func validBranchID(id string) error {
	_, err := ledger.NewBranchID(id)
	return err
}

// readmeTime dates the README commit of refs/heads/main. It is fixed, not
// the time a ledger was made, so that every ledger starts the same main:
// two servers of a team that push to an empty remote at once then offer
// the same commit, and neither ledger's main differs from the remote's.
var readmeTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (s *Store) ensureReadme(ctx context.Context) error {
	if !s.lay.readme() {
		return nil
	}
	cur, err := s.be.ReadRef(ctx, "refs/heads/main")
	if err != nil || cur != zeroHash {
		return err
	}
	readme := []byte(readmeText)
	blob := object.HashObject(typeBlob, readme)
	root := &object.Tree{}
	root.Set(object.TreeEntry{Name: "README.md", ID: blob})
	b := &batch{Objects: []logObject{{ID: blob, Type: typeBlob, Data: readme}}}
	cid := addCommit(b, commitSpec{tree: addTree(b, root), when: readmeTime,
		message: "Start the ledger\n\nThis branch holds only the README; every session lives on its own refs.\n"})
	b.Updates = []refUpdate{{Name: "refs/heads/main", Old: zeroHash, New: cid}}
	err = s.be.Apply(ctx, b)
	if errors.Is(err, errConflict) {
		return nil // another process wrote it first
	}
	return err
}

const readmeText = `# Thoughtbox reasoning ledger

This repository is written by Thoughtbox. Every thought an agent records is a
commit; every session has its own refs, so this ` + "`main`" + ` branch holds only
this file.

Browse it with plain Git:

    git branch --list 'sessions/*'                   # one main ref per session, plus its branches
    git log sessions/<sessionId>/main                # a session's thoughts, newest first
    git show sessions/<sessionId>/main               # the latest thought and its manifest change
    git diff sessions/<id>/main sessions/<id>/branches/<branchId>   # what a reasoning branch explored

Each session lives in sessions/<partition>/<sessionId>/: manifest.json lists
the thought files in the order they were written, NNN.json holds thought NNN,
and branches/<branchId>/ holds the thoughts of a reasoning branch (on that
branch's ref only). Commit messages carry trailers: Thoughtbox-Session,
Thoughtbox-Thought, Thoughtbox-Branch and, for revisions, Thoughtbox-Revises
naming the commit of the thought revised.
`

// CreateSession implements ledger.Store.
func (s *Store) CreateSession(ctx context.Context, meta ledger.SessionMeta, author ledger.Author) (ledger.SessionMeta, ledger.CommitID, error) {
	if err := validSessionID(meta.ID); err != nil {
		return meta, "", err
	}
	meta.PartitionPath = s.opts.Partition.Partition(meta.CreatedAt)
	if meta.UpdatedAt.IsZero() {
		meta.UpdatedAt = meta.CreatedAt
	}
	ref := s.lay.mainRef(meta.ID)
	cs := s.chain(ref)
	cs.Lock()
	defer cs.Unlock()

	m := manifest.New(meta.ID)
	setMeta(m, meta)
	st := chain.New(m, chainFolders, meta.PartitionPath)

	var msg strings.Builder
	msg.WriteString("Start session: " + firstLine(meta.Title, 72) + "\n")
	if d := strings.TrimSpace(meta.Description); d != "" {
		msg.WriteString("\n" + d + "\n")
	}
	msg.WriteString("\n" + trailerSession + ": " + meta.ID + "\n")
	b, cid := buildCommit(st, nil, "", author, meta.CreatedAt, msg.String(), zeroHash)
	b.Updates = []refUpdate{{Name: ref, Old: zeroHash, New: cid}}
	if err := s.be.Apply(ctx, b); err != nil {
		cs.Invalidate()
		if errors.Is(err, errConflict) {
			return meta, "", fmt.Errorf("session %s already exists", meta.ID)
		}
		return meta, "", err
	}
	st.Settle(cid)
	cs.Adopt(st)
	return meta, ledger.CommitID(cid.String()), nil
}

func setMeta(m *manifest.Manifest, meta ledger.SessionMeta) {
	m.Metadata.Title = meta.Title
	if meta.Description != "" {
		d := meta.Description
		m.Metadata.Description = &d
	} else {
		m.Metadata.Description = nil
	}
	m.Metadata.Tags = append([]string{}, meta.Tags...)
	m.Metadata.CreatedAt = meta.CreatedAt
	m.Metadata.UpdatedAt = meta.UpdatedAt
}

func sig(a ledger.Author, when time.Time) object.Signature {
	name, email := a.Name, a.Email
	if name == "" {
		name = "unknown agent"
	}
	if email == "" {
		email = slug(name) + "@agents.thoughtbox.invalid"
	}
	return object.Signature{Name: cleanSig(name), Email: cleanSig(email), When: when.UTC()}
}

// sigCleaner drops what would corrupt a commit header: angle brackets and
// newlines. Built once: a replacer costs more to make than to use.
var sigCleaner = strings.NewReplacer("<", "", ">", "", "\n", " ")

func cleanSig(s string) string {
	if !strings.ContainsAny(s, "<>\n") {
		return s
	}
	return sigCleaner.Replace(s)
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' || r == '.' {
			b.WriteRune(r)
		} else if b.Len() > 0 {
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "agent"
	}
	return strings.Trim(b.String(), "-.")
}

func firstLine(s string, max int) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) <= max {
		return line
	}
	// Cut where the (max-1)th rune ends, without converting the line to
	// runes and back; a line that is not valid UTF-8 takes the
	// conversion, which writes its bad bytes as U+FFFD.
	end := 0
	for n := 0; n < max-1; n++ {
		r, size := utf8.DecodeRuneInString(line[end:])
		if r == utf8.RuneError && size == 1 {
			return string([]rune(line)[:max-1]) + "…"
		}
		end += size
	}
	return line[:end] + "…"
}

// Append implements ledger.Store.
// lockChain validates a chain's names, locks its state and makes sure the
// state is that of the commit the caller expects to grow from. The caller
// unlocks cs.
func (s *Store) lockChain(id, branch string, tip ledger.CommitID) (cs *chain.State, ref string, expected hash, err error) {
	if err := validSessionID(id); err != nil {
		return nil, "", zeroHash, err
	}
	if branch != "" {
		if err := validBranchID(branch); err != nil {
			return nil, "", zeroHash, err
		}
	}
	if expected, err = object.ParseHash(string(tip)); err != nil {
		return nil, "", zeroHash, fmt.Errorf("expected tip: %w", err)
	}
	ref = s.lay.chainRef(id, branch)
	cs = s.chain(ref)
	cs.Lock()
	if !cs.At(expected) {
		st, err := s.readChain(expected, id, branch)
		if err != nil {
			cs.Unlock()
			return nil, "", zeroHash, err
		}
		cs.Adopt(st)
	}
	return cs, ref, expected, nil
}

func (s *Store) Append(ctx context.Context, req ledger.AppendRequest) (ledger.CommitID, error) {
	id := req.Meta.ID
	cs, ref, expected, err := s.lockChain(id, req.Branch, req.ExpectedTip)
	if err != nil {
		return "", err
	}
	defer cs.Unlock()
	cs.Invalidate() // until the batch is applied: build changes it in place

	t := req.Thought
	name := thoughtFile(t.ThoughtNumber)
	if _, exists := cs.Entry(name); exists {
		return "", fmt.Errorf("thought %d is already stored on this chain: %w", t.ThoughtNumber, ledger.ErrConflict)
	}
	file, err := encodeThoughtFile(t)
	if err != nil {
		return "", err
	}
	cs.AddFile(req.Branch, name, req.NewBranch)
	if req.Branch == "" {
		if err := s.refreshBranchLists(ctx, id, cs.Manifest()); err != nil {
			return "", err
		}
	}
	meta := req.Meta
	meta.UpdatedAt = t.Timestamp
	setMeta(cs.Manifest(), meta)

	b, cid := buildCommit(cs, file, name, req.Author, t.Timestamp, thoughtMessage(id, req), expected)
	old := expected
	if req.NewBranch {
		old = zeroHash
	}
	b.Updates = []refUpdate{{Name: ref, Old: old, New: cid}}
	err = s.be.Apply(ctx, b)
	for i := range b.Objects {
		b.Objects[i].Whole = nil // the next build reuses those buffers
	}
	if err != nil {
		if errors.Is(err, errConflict) {
			return "", ledger.ErrConflict
		}
		return "", err
	}
	cs.Settle(cid)
	if req.Branch != "" {
		s.branchRefs.forget(id)
	}
	return ledger.CommitID(cid.String()), nil
}

// maxCatchUp bounds how many commits ThoughtsSince walks; a chain that
// moved further is cheaper to load whole.
const maxCatchUp = 1000

// ThoughtsSince implements ledger.ChainCatchUp: the thoughts a chain gained
// after the commit since, oldest first, and the chain's tip. It reads only
// the new commits and their files, so a writer that lost a race catches up
// in time proportional to what it missed, not to the session. ok is false
// when the history since is anything but new thoughts on that chain (a
// critique, a ref that did not grow from since, more than maxCatchUp
// commits); the caller then loads the whole session. The chain's state is
// left at the tip, ready for the caller's next Append.
func (s *Store) ThoughtsSince(ctx context.Context, sessionID, branch string, since ledger.CommitID) (thoughts []ledger.StoredThought, tip ledger.CommitID, ok bool, err error) {
	if validSessionID(sessionID) != nil || branch != "" && validBranchID(branch) != nil {
		return nil, "", false, nil
	}
	from, err := object.ParseHash(string(since))
	if err != nil {
		return nil, "", false, nil
	}
	if s.sessionLocks != nil && s.sessionLocks.Quiet(sessionID) && s.chainAt(s.lay.chainRef(sessionID, branch), from) {
		// Held by this store, and nobody took the session's lock since
		// this store last wrote it: no writer that takes turns moved the
		// chain. One that does not is still caught by compare-and-swap.
		return nil, since, true, nil
	}
	head, err := s.be.ReadRef(ctx, s.lay.chainRef(sessionID, branch))
	if err != nil || head == zeroHash {
		return nil, "", false, err
	}
	var commits []hash
	var numbers []int
	for cur := head; cur != from; {
		if len(commits) == maxCatchUp {
			return nil, "", false, nil
		}
		c, err := s.readCommit(cur)
		if err != nil {
			return nil, "", false, err
		}
		tr := trailers(c.Message)
		n, nerr := strconv.Atoi(tr[trailerThought])
		if nerr != nil || len(c.Parents) == 0 || tr[trailerSession] != sessionID ||
			tr[trailerBranch] != branch || tr[trailerCritique] != "" {
			return nil, "", false, nil
		}
		commits, numbers = append(commits, cur), append(numbers, n)
		cur = c.Parents[0]
	}
	tip = ledger.CommitID(head.String())
	if len(commits) == 0 {
		return nil, tip, true, nil
	}
	cs, _, _, err := s.lockChain(sessionID, branch, tip)
	if err != nil {
		return nil, "", false, err
	}
	defer cs.Unlock()
	thoughts = make([]ledger.StoredThought, len(commits))
	for i := range commits {
		j := len(commits) - 1 - i
		e, found := cs.Entry(thoughtFile(numbers[j]))
		if !found {
			return nil, "", false, nil
		}
		data, err := s.readBlob(e.ID)
		if err != nil {
			return nil, "", false, err
		}
		var td ledger.ThoughtData
		if decodeThoughtFile(data, &td) != nil || td.ThoughtNumber != numbers[j] {
			return nil, "", false, nil
		}
		thoughts[i] = ledger.StoredThought{Data: td, Commit: ledger.CommitID(commits[j].String())}
	}
	return thoughts, tip, true, nil
}

// AddCritique implements ledger.Store: the thought's file is rewritten with
// its critique in a commit of its own, authored by the model.
func (s *Store) AddCritique(ctx context.Context, req ledger.CritiqueRequest) (ledger.CommitID, error) {
	id := req.Meta.ID
	cs, ref, expected, err := s.lockChain(id, req.Branch, req.ExpectedTip)
	if err != nil {
		return "", err
	}
	defer cs.Unlock()
	name := thoughtFile(req.ThoughtNumber)
	e, ok := cs.Entry(name)
	if !ok {
		return "", fmt.Errorf("thought %d on %s: %w", req.ThoughtNumber, chainLabel(req.Branch), ledger.ErrThoughtNotFound)
	}
	data, err := s.readBlob(e.ID)
	if err != nil {
		return "", err
	}
	var td ledger.ThoughtData
	if err := decodeThoughtFile(data, &td); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	c := req.Critique
	td.Critique = &c
	file, err := encodeThoughtFile(td)
	if err != nil {
		return "", err
	}
	cs.Invalidate() // until the batch is applied: build changes it in place
	when := c.Timestamp
	if when.IsZero() {
		when = time.Now().UTC()
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "Critique of thought %d by %s\n\n%s\n\n", req.ThoughtNumber, firstLine(c.Model, 60), strings.TrimSpace(c.Text))
	msg.WriteString(trailerSession + ": " + id + "\n")
	fmt.Fprintf(&msg, "%s: %d\n", trailerThought, req.ThoughtNumber)
	if req.Branch != "" {
		msg.WriteString(trailerBranch + ": " + req.Branch + "\n")
	}
	msg.WriteString(trailerCritique + ": " + firstLine(c.Model, 100) + "\n")
	b, cid := buildCommit(cs, file, name, req.Author, when, msg.String(), expected)
	b.Updates = []refUpdate{{Name: ref, Old: expected, New: cid}}
	err = s.be.Apply(ctx, b)
	for i := range b.Objects {
		b.Objects[i].Whole = nil // the next build reuses those buffers
	}
	if err != nil {
		if errors.Is(err, errConflict) {
			return "", ledger.ErrConflict
		}
		return "", err
	}
	cs.Settle(cid)
	if req.Branch != "" {
		s.branchRefs.forget(req.Meta.ID)
	}
	return ledger.CommitID(cid.String()), nil
}

func chainLabel(branch string) string {
	if branch == "" {
		return "the main chain"
	}
	return "branch " + branch
}

func thoughtMessage(sessionID string, req ledger.AppendRequest) string {
	t := req.Thought
	text := strings.TrimSpace(t.Thought)
	subject := firstLine(text, 72)
	first, rest, _ := strings.Cut(text, "\n")
	body := strings.TrimSpace(rest)
	if strings.TrimSpace(first) != subject { // the subject was cut: keep it whole below
		body = text
	}
	// Written piece by piece into one buffer sized up front: this runs for
	// every thought, and fmt and string concatenation cost more than the
	// message.
	var m strings.Builder
	m.Grow(len(subject) + len(body) + len(sessionID) + len(req.Branch) + len(req.Revises) + 160)
	num := strconv.Itoa(t.ThoughtNumber)
	m.WriteString("Thought ")
	m.WriteString(num)
	m.WriteString(": ")
	m.WriteString(subject)
	m.WriteByte('\n')
	if body != "" {
		m.WriteByte('\n')
		m.WriteString(body)
		m.WriteByte('\n')
	}
	m.WriteString("\n" + trailerSession + ": ")
	m.WriteString(sessionID)
	m.WriteString("\n" + trailerThought + ": ")
	m.WriteString(num)
	m.WriteByte('\n')
	if req.Branch != "" {
		m.WriteString(trailerBranch + ": ")
		m.WriteString(req.Branch)
		m.WriteByte('\n')
	}
	if t.IsRevision && t.RevisesThought != nil {
		m.WriteString(trailerRevises + ": ")
		if req.Revises != "" {
			m.WriteString(string(req.Revises))
			m.WriteString(" (thought ")
			m.WriteString(strconv.Itoa(*t.RevisesThought))
			m.WriteString(")\n")
		} else {
			m.WriteString("thought ")
			m.WriteString(strconv.Itoa(*t.RevisesThought))
			m.WriteByte('\n')
		}
	}
	return m.String()
}

// trailers returns the Thoughtbox-* trailers of a commit message's last
// paragraph.
func trailers(msg string) map[string]string {
	msg = strings.TrimRight(msg, "\n")
	if i := strings.LastIndex(msg, "\n\n"); i >= 0 {
		msg = msg[i+2:]
	}
	out := map[string]string{}
	for _, line := range strings.Split(msg, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if ok && strings.HasPrefix(k, "Thoughtbox-") {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// LockSession implements ledger.SessionLocker: a durable.Mutex in
// thoughtbox/locks/<session id>.lock, so that writers of one session in
// different processes take turns (see doc/architecture.md, "Locks").
// On the in-memory store, which no other process shares, it does nothing.
func (s *Store) LockSession(ctx context.Context, sessionID string) (func(), error) {
	if err := validSessionID(sessionID); err != nil {
		return nil, err
	}
	if s.sessionLocks == nil {
		return func() {}, nil
	}
	if fb := s.disk; fb != nil && fb.ReadOnly() {
		return nil, fmt.Errorf("%s: %w", fb.GitDir(), ErrReadOnly)
	}
	return s.sessionLocks.Lock(ctx, sessionID)
}

// Accessed implements ledger.AccessKeeper.
func (s *Store) Accessed() map[string]time.Time { return s.access.All() }

// AccessedAt implements ledger.AccessLookup: one session's time, without
// reading every session's (see gitstore/internal/access).
func (s *Store) AccessedAt(id string) time.Time { return s.access.At(id) }

// RecordAccess implements ledger.AccessKeeper.
func (s *Store) RecordAccess(id string, t time.Time) { s.access.Record(id, t) }

// racyStamps numbers the stamps ChangeStamp takes while a time is racy,
// so that no two are alike (the clock may not move between two calls).
var racyStamps atomic.Uint64

// ChangeStamp is a cheap fingerprint of what other processes may have
// written: the log's and packed-refs' identities, sizes and times. Every writer of
// ours goes through the log, so a stamp that did not change means no new
// thought; one that changed says to look (a reader such as the standalone
// Observatory polls it). While a time is too recent to tell the next
// write by (durable.Racy), the stamp differs at every call, so the caller
// keeps looking until it has settled. Memory storage has no other
// writers: "".
func (s *Store) ChangeStamp() (string, error) {
	be := s.disk
	if be == nil {
		return "", nil
	}
	var b strings.Builder
	now := time.Now()
	for _, p := range []string{be.LogPath(), filepath.Join(be.GitDir(), "packed-refs")} {
		fi, err := os.Stat(p)
		switch {
		case err == nil:
			fmt.Fprintf(&b, "%d/%d/%d;", durable.StatID(fi), fi.Size(), fi.ModTime().UnixNano())
			if durable.Racy(fi.ModTime(), now) {
				// A time this recent may not move with the next write
				// (the log keeps its size: zeros are laid ahead): a
				// stamp that differs at each call makes the caller
				// look until the time has settled.
				fmt.Fprintf(&b, "racy %d;", racyStamps.Add(1))
			}
		case errors.Is(err, fs.ErrNotExist):
			b.WriteString("-;")
		default:
			return "", err
		}
	}
	return b.String(), nil
}
