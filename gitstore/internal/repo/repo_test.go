package repo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gitconfig "github.com/go-git/go-git/v5/config"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
	"github.com/thoughtbox/thoughtbox/internal/durable"
)

const sessions = "refs/heads/sessions/"

var roots = []string{"refs/heads/sessions", "refs/heads/knowledge", "refs/heads/notebooks"}

func openFS(t *testing.T, dir string) *FS {
	t.Helper()
	r, err := OpenFS(dir, FSOptions{FlushEvery: time.Hour, LockTimeout: 5 * time.Second, LockedRefRoots: roots})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	out, err := exec.Command("git", append([]string{"--git-dir", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commitBatch builds a commit of one file (with the given parent) and the
// ref move that publishes it.
func commitBatch(ref string, old object.Hash, parent object.Hash, content string) (*wal.Batch, object.Hash) {
	blob := []byte(content)
	blobID := object.HashObject(object.TypeBlob, blob)
	tree := &object.Tree{}
	tree.Set(object.TreeEntry{Name: "file.txt", ID: blobID})
	treeData := tree.Encode()
	treeID := object.HashObject(object.TypeTree, treeData)
	sig := object.Signature{Name: "T", Email: "t@example.com", When: time.Unix(1700000000, 0).UTC()}
	c := &object.Commit{Tree: treeID, Author: sig, Committer: sig, Message: content + "\n"}
	if parent != object.ZeroHash {
		c.Parents = []object.Hash{parent}
	}
	cData := c.Encode()
	cID := object.HashObject(object.TypeCommit, cData)
	return &wal.Batch{
		Objects: []wal.Object{
			{ID: blobID, Type: object.TypeBlob, Data: blob},
			{ID: treeID, Type: object.TypeTree, Data: treeData},
			{ID: cID, Type: object.TypeCommit, Data: cData},
		},
		Updates: []wal.RefUpdate{{Name: ref, Old: old, New: cID}},
	}, cID
}

// contract runs what every Repo must do.
func contract(t *testing.T, r Repo) {
	ctx := t.Context()
	ref := sessions + "s1/main"
	b1, c1 := commitBatch(ref, object.ZeroHash, object.ZeroHash, "one")
	if err := r.Apply(ctx, b1); err != nil {
		t.Fatal(err)
	}
	if h, err := r.ReadRef(ctx, ref); err != nil || h != c1 {
		t.Fatalf("ReadRef = %s, %v; want %s", h, err, c1)
	}
	if h, err := r.ReadRef(ctx, sessions+"nope/main"); err != nil || h != object.ZeroHash {
		t.Fatalf("ReadRef of a missing ref = %s, %v", h, err)
	}
	typ, data, err := r.ReadObject(ctx, c1)
	if err != nil || typ != object.TypeCommit || object.HashObject(typ, data) != c1 {
		t.Fatalf("ReadObject(%s) = %v %q %v", c1, typ, data, err)
	}
	if _, _, err := r.ReadObject(ctx, object.HashObject(object.TypeBlob, []byte("absent"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ReadObject of a missing object: %v, want ErrNotFound", err)
	}

	// Compare-and-swap: a stale old value changes nothing.
	b2, c2 := commitBatch(ref, c1, c1, "two")
	stale, _ := commitBatch(ref, object.ZeroHash, object.ZeroHash, "stale")
	if err := r.Apply(ctx, stale); !errors.Is(err, ErrConflict) {
		t.Fatalf("Apply with a stale old value: %v, want ErrConflict", err)
	}
	if err := r.Apply(ctx, b2); err != nil {
		t.Fatal(err)
	}
	if h, _ := r.ReadRef(ctx, ref); h != c2 {
		t.Fatalf("ref = %s after the second commit, want %s", h, c2)
	}

	// An object logged as an edit of its base reads back whole.
	base := bytes.Repeat([]byte("line of text\n"), 500)
	baseID := object.HashObject(object.TypeBlob, base)
	next := append(slices.Clone(base), "one more line\n"...)
	nextID := object.HashObject(object.TypeBlob, next)
	ed := delta.Diff(base, next)
	eb := &wal.Batch{Objects: []wal.Object{
		{ID: baseID, Type: object.TypeBlob, Data: base},
		{ID: nextID, Type: object.TypeBlob, Base: baseID, Edit: ed},
	}, Updates: []wal.RefUpdate{{Name: "refs/tags/edited", New: nextID}}}
	if err := r.Apply(ctx, eb); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second read comes from the rebuilt cache
		if _, got, err := r.ReadObject(ctx, nextID); err != nil || !bytes.Equal(got, next) {
			t.Fatalf("ReadObject of an edited object: %d bytes, %v", len(got), err)
		}
	}

	// Listing, by prefix, and deletion.
	other := sessions + "s2/branches/b"
	b3, c3 := commitBatch(other, object.ZeroHash, object.ZeroHash, "three")
	if err := r.Apply(ctx, b3); err != nil {
		t.Fatal(err)
	}
	all, err := r.ListRefs(ctx, sessions)
	if err != nil || len(all) != 2 || all[ref] != c2 || all[other] != c3 {
		t.Fatalf("ListRefs(%s) = %v, %v", sessions, all, err)
	}
	one, err := r.ListRefs(ctx, sessions+"s2/")
	if err != nil || len(one) != 1 || one[other] != c3 {
		t.Fatalf("ListRefs of one session = %v, %v", one, err)
	}
	if err := r.Apply(ctx, &wal.Batch{Updates: []wal.RefUpdate{{Name: other, Old: c3}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.ListRefs(ctx, sessions+"s2/"); len(got) != 0 {
		t.Fatalf("a deleted ref is still listed: %v", got)
	}
	if h, _ := r.ReadRef(ctx, other); h != object.ZeroHash {
		t.Fatalf("a deleted ref reads %s", h)
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if h, _ := r.ReadRef(ctx, ref); h != c2 {
		t.Fatalf("after Flush ref = %s, want %s", h, c2)
	}
	if got, _ := r.ListRefs(ctx, sessions); len(got) != 1 {
		t.Fatalf("after Flush ListRefs = %v", got)
	}
	if _, got, err := r.ReadObject(ctx, nextID); err != nil || !bytes.Equal(got, next) {
		t.Fatalf("after Flush an edited object reads %d bytes, %v", len(got), err)
	}
}

func TestContractFS(t *testing.T) {
	dir := t.TempDir()
	r := openFS(t, dir)
	contract(t, r)
	// What the flush published is what plain Git reads.
	tip, _ := r.ReadRef(t.Context(), sessions+"s1/main")
	if got := git(t, dir, "rev-parse", sessions+"s1/main"); got != tip.String() {
		t.Fatalf("git rev-parse = %s, want %s", got, tip)
	}
	if got := git(t, dir, "show", tip.String()+":file.txt"); got != "two" {
		t.Fatalf("git show = %q", got)
	}
	git(t, dir, "fsck", "--strict", "--full")
	if r.GitDir() != dir || r.ReadOnly() || r.LogPath() != filepath.Join(dir, "thoughtbox", "log") {
		t.Fatalf("GitDir %s, ReadOnly %v, LogPath %s", r.GitDir(), r.ReadOnly(), r.LogPath())
	}
}

func TestContractMem(t *testing.T) { contract(t, NewMem(sessions)) }

// TestFSGroupCommit: many writers at once all commit, each once, and a
// second opener of the repository (as another process) sees every ref
// before anything is flushed; after Close plain Git sees them too.
func TestFSGroupCommit(t *testing.T) {
	dir := t.TempDir()
	r := openFS(t, dir)
	other := openFS(t, dir)
	const n = 40
	var wg sync.WaitGroup
	errs := make([]error, n)
	tips := make([]object.Hash, n)
	for i := range n {
		wg.Go(func() {
			b, c := commitBatch(fmt.Sprintf("%ss%d/main", sessions, i), object.ZeroHash, object.ZeroHash, fmt.Sprint(i))
			tips[i] = c
			errs[i] = r.Apply(t.Context(), b)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	got, err := other.ListRefs(t.Context(), sessions)
	if err != nil || len(got) != n {
		t.Fatalf("the other opener lists %d refs (%v), want %d", len(got), err, n)
	}
	names, hashes, err := other.SortedRefs(t.Context(), sessions)
	if err != nil || len(names) != n || !slices.IsSorted(names) {
		t.Fatalf("SortedRefs: %d names, sorted %v, %v", len(names), slices.IsSorted(names), err)
	}
	for i, name := range names {
		if got[name] != hashes[i] {
			t.Fatalf("SortedRefs has %s at %s, ListRefs %s", name, hashes[i], got[name])
		}
	}
	if _, data, err := other.ReadObject(t.Context(), tips[7]); err != nil || !bytes.Contains(data, []byte("\n\n7\n")) {
		t.Fatalf("the other opener reads commit 7 as %q, %v", data, err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	if err := r.Apply(t.Context(), &wal.Batch{}); err == nil {
		t.Fatal("Apply after Close succeeded")
	}
	out := git(t, dir, "for-each-ref", "--format=%(refname)", sessions)
	if c := len(strings.Fields(out)); c != n {
		t.Fatalf("git lists %d session refs after Close, want %d", c, n)
	}
	git(t, dir, "fsck", "--strict", "--full")
}

// TestFSRecoversTheLog: what a process logged and never flushed (killed
// before its flusher ran) is published by the next open.
func TestFSRecoversTheLog(t *testing.T) {
	dir := t.TempDir()
	r := openFS(t, dir)
	b, c := commitBatch(sessions+"s1/main", object.ZeroHash, object.ZeroHash, "kept")
	if err := r.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	// As if killed: the log stays, the flusher never ran. Copy the
	// repository as it is now; the copy has the log and no refs.
	crashed := t.TempDir()
	if out, err := exec.Command("cp", "-a", dir+"/.", crashed).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(crashed, "refs", "heads", "sessions", "s1", "main")); err == nil {
		t.Fatal("the ref was published before the flush")
	}
	// Leftovers of a killed flusher are removed at open.
	lock := filepath.Join(crashed, "refs", "heads", "sessions", "s9", "main.lock")
	os.MkdirAll(filepath.Dir(lock), 0o755)
	os.WriteFile(lock, []byte("x"), 0o644)
	tmpPack := filepath.Join(crashed, "objects", "pack", "tmp_pack_123")
	os.WriteFile(tmpPack, []byte("x"), 0o644)

	r2 := openFS(t, crashed)
	if got := git(t, crashed, "rev-parse", sessions+"s1/main"); got != c.String() {
		t.Fatalf("after recovery git rev-parse = %s, want %s", got, c)
	}
	for _, p := range []string{lock, tmpPack} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s survived the open: %v", p, err)
		}
	}
	if h, _ := r2.ReadRef(t.Context(), sessions+"s1/main"); h != c {
		t.Fatalf("ReadRef after recovery = %s", h)
	}
}

// TestFSLooseObjectsFromGit: objects and refs written by plain git are
// read.
func TestFSLooseObjectsFromGit(t *testing.T) {
	dir := t.TempDir()
	r := openFS(t, dir)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	cmd := exec.Command("git", "--git-dir", dir, "hash-object", "-w", "--stdin")
	cmd.Stdin = strings.NewReader("written by git\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	id, err := object.ParseHash(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	typ, data, err := r.ReadObject(t.Context(), id)
	if err != nil || typ != object.TypeBlob || string(data) != "written by git\n" {
		t.Fatalf("loose object reads %v %q %v", typ, data, err)
	}
	git(t, dir, "update-ref", "refs/tags/from-git", id.String())
	if h, err := r.ReadRef(t.Context(), "refs/tags/from-git"); err != nil || h != id {
		t.Fatalf("ReadRef of a git-written ref = %s, %v", h, err)
	}
}

// TestFSIngestPack: a pack stored by IngestPack is read through the pack
// set, and git accepts it.
func TestFSIngestPack(t *testing.T) {
	dir := t.TempDir()
	r := openFS(t, dir)
	b, c := commitBatch(sessions+"x/main", object.ZeroHash, object.ZeroHash, "packed")
	var objs []pack.Object
	for _, o := range b.Objects {
		objs = append(objs, pack.Object{ID: o.ID, Type: o.Type, Data: o.Data, Base: -1})
	}
	src := t.TempDir()
	name, err := pack.Write(src, objs)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(src, "pack-"+name.String()+".pack"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, size, err := r.IngestPack(t.Context(), filepath.Join(dir, "thoughtbox", "transfer"), f)
	if err != nil || n != len(objs) || size == 0 {
		t.Fatalf("IngestPack = %d objects, %d bytes, %v", n, size, err)
	}
	if !r.Packs().Has(c) {
		t.Fatal("the pack set does not have the ingested commit")
	}
	if got := git(t, dir, "cat-file", "-t", c.String()); got != "commit" {
		t.Fatalf("git cat-file -t = %s", got)
	}
	mem := NewMem(sessions)
	f.Seek(0, 0)
	if _, _, err := mem.IngestPack(t.Context(), f); err != nil {
		t.Fatal(err)
	}
	if _, _, err := mem.ReadObject(t.Context(), c); err != nil {
		t.Fatalf("memory storage lost the ingested commit: %v", err)
	}
}

// TestFSCancelledContext: a cancelled caller is refused before anything
// is queued, and a flush waiting for another process's lock gives up.
func TestFSCancelledContext(t *testing.T) {
	dir := t.TempDir()
	r := openFS(t, dir)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	b, _ := commitBatch(sessions+"s/main", object.ZeroHash, object.ZeroHash, "x")
	if err := r.Apply(ctx, b); !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply with a cancelled context: %v", err)
	}
	if h, _ := r.ReadRef(t.Context(), sessions+"s/main"); h != object.ZeroHash {
		t.Fatal("a refused batch was applied")
	}
	// Another process holds the flush lock: Flush waits, until ctx ends.
	fl, err := os.OpenFile(filepath.Join(dir, "thoughtbox", "flush.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	if ok, err := durable.TryLock(fl, nil); !ok || err != nil {
		t.Fatalf("flush lock: %v %v", ok, err)
	}
	if err := r.Flush(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Flush with a cancelled context while the flush lock is held: %v", err)
	}
	durable.Unlock(fl)
}

// TestFSManyFlushesPackRefsAndMerge drives the flusher's bookkeeping: ref
// packing past PackRefsEvery loose refs and pack merges.
func TestFSManyFlushesPackRefsAndMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("writes hundreds of refs")
	}
	dir := t.TempDir()
	r := openFS(t, dir)
	ctx := t.Context()
	for i := range PackRefsEvery + 10 {
		b, _ := commitBatch(fmt.Sprintf("%ss%d/main", sessions, i), object.ZeroHash, object.ZeroHash, fmt.Sprint(i))
		if err := r.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
		if i%20 == 0 {
			if err := r.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "packed-refs")); err != nil {
		t.Fatalf("refs were not packed: %v", err)
	}
	if n := len(r.Packs().Packs()); n > 8 {
		t.Fatalf("%d packs after %d flushes: merges did not run", n, PackRefsEvery/20)
	}
	out := git(t, dir, "for-each-ref", "--format=%(refname)", sessions)
	if c := len(strings.Fields(out)); c != PackRefsEvery+10 {
		t.Fatalf("git lists %d refs", c)
	}
	git(t, dir, "fsck", "--strict", "--full")
}

// TestFSRewrittenRefsStayLoose: a few sessions written flush after flush
// keep their few loose ref files; only many distinct loose refs are worth
// packing (each packing removed the files' folders, which the next flush
// created and synced again).
func TestFSRewrittenRefsStayLoose(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of flushes")
	}
	dir := t.TempDir()
	r := openFS(t, dir)
	ctx := t.Context()
	const refsN = 3
	tips := make([]object.Hash, refsN)
	for i := range PackRefsEvery/refsN + 10 {
		for k := range tips {
			b, id := commitBatch(fmt.Sprintf("%ss%d/main", sessions, k), tips[k], tips[k], fmt.Sprint(i, k))
			if err := r.Apply(ctx, b); err != nil {
				t.Fatal(err)
			}
			tips[k] = id
		}
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "packed-refs")); err == nil {
		t.Fatalf("%d refs rewritten %d times each were packed", refsN, PackRefsEvery/refsN+10)
	}
	for k, tip := range tips {
		if got := git(t, dir, "rev-parse", fmt.Sprintf("%ss%d/main", sessions, k)); got != tip.String() {
			t.Fatalf("ref %d: git sees %s, want %s", k, got, tip)
		}
	}
	// Reopened, the loose refs found are counted (by name): with them,
	// PackRefsEvery-refsN new ones reach the threshold.
	r.Close()
	r = openFS(t, dir)
	for i := range PackRefsEvery - refsN {
		b, _ := commitBatch(fmt.Sprintf("%sn%d/main", sessions, i), object.ZeroHash, object.ZeroHash, fmt.Sprint(i))
		if err := r.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "packed-refs")); err != nil {
		t.Fatalf("%d loose refs (%d found at open) were not packed: %v", PackRefsEvery, refsN, err)
	}
	git(t, dir, "fsck", "--strict", "--full")
}

func TestFSOpenReadOnly(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes read-only files")
	}
	dir := t.TempDir()
	r := openFS(t, dir)
	b, c := commitBatch(sessions+"s/main", object.ZeroHash, object.ZeroHash, "x")
	if err := r.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	r.Close()
	os.Chmod(filepath.Join(dir, "thoughtbox", "log"), 0o444)
	ro := openFS(t, dir)
	if !ro.ReadOnly() {
		t.Fatal("not read-only")
	}
	if h, _ := ro.ReadRef(t.Context(), sessions+"s/main"); h != c {
		t.Fatalf("read-only ReadRef = %s", h)
	}
	if err := ro.Apply(t.Context(), &wal.Batch{}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Apply on a read-only repository: %v", err)
	}
}

func TestMemEditChainsAndConfig(t *testing.T) {
	m := NewMem(sessions)
	ctx := t.Context()
	// More versions than memEditDepth, each an edit of the one before.
	prev := bytes.Repeat([]byte("x"), 5000)
	prevID := object.HashObject(object.TypeBlob, prev)
	if err := m.Apply(ctx, &wal.Batch{Objects: []wal.Object{{ID: prevID, Type: object.TypeBlob, Data: prev}}}); err != nil {
		t.Fatal(err)
	}
	var ids []object.Hash
	var versions [][]byte
	for i := range 2*memEditDepth + 3 {
		next := append(slices.Clone(prev), fmt.Sprintf("v%d\n", i)...)
		id := object.HashObject(object.TypeBlob, next)
		o := wal.Object{ID: id, Type: object.TypeBlob, Base: prevID, Edit: delta.Diff(prev, next)}
		if i%2 == 0 {
			o.Whole = next
		}
		if err := m.Apply(ctx, &wal.Batch{Objects: []wal.Object{o, o}}); err != nil {
			t.Fatal(err)
		}
		ids, versions = append(ids, id), append(versions, next)
		prev, prevID = next, id
	}
	for i, id := range ids {
		if _, got, err := m.ReadObject(ctx, id); err != nil || !bytes.Equal(got, versions[i]) {
			t.Fatalf("version %d reads %d bytes, %v", i, len(got), err)
		}
	}
	bad := wal.Object{ID: object.HashObject(object.TypeBlob, []byte("y")), Type: object.TypeBlob,
		Base: object.HashObject(object.TypeBlob, []byte("no base")), Edit: delta.Diff(nil, []byte("y"))}
	if err := m.Apply(ctx, &wal.Batch{Objects: []wal.Object{bad}}); err == nil {
		t.Fatal("an edit of a missing base was accepted")
	}
	// Flattening keeps every version readable.
	m.mu.Lock()
	err := m.flattenLocked()
	m.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if _, got, err := m.ReadObject(ctx, ids[5]); err != nil || !bytes.Equal(got, versions[5]) {
		t.Fatalf("after flattening version 5 reads %d bytes, %v", len(got), err)
	}
	// Every object go-git holds is stored under the hash of its content.
	for h, o := range m.st.Objects {
		r, err := o.Reader()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := object.HashObject(o.Type(), data); got != h || o.Hash() != h || o.Size() != int64(len(data)) {
			t.Fatalf("object stored as %s hashes to %s (Hash %s, Size %d for %d bytes)", h, got, o.Hash(), o.Size(), len(data))
		}
	}

	if err := m.EditConfig(func(c *gitconfig.Config) error {
		c.Remotes["origin"] = &gitconfig.RemoteConfig{Name: "origin", URLs: []string{"/tmp/x"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cfg, err := m.Config()
	if err != nil || cfg.Remotes["origin"] == nil {
		t.Fatalf("Config after EditConfig: %v, %v", cfg, err)
	}
	refuse := errors.New("no")
	if err := m.EditConfig(func(*gitconfig.Config) error { return refuse }); !errors.Is(err, refuse) {
		t.Fatalf("EditConfig passes on its change's error: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMemKeepsItsOwnCopy checks that a version stored whole from the
// builder's Whole does not share that buffer (the builder writes its next
// version into it), and that a reader's copy is its own. A batch's Data is
// not copied: like the log's overlay (FS.applyLocked), Mem keeps it.
func TestMemKeepsItsOwnCopy(t *testing.T) {
	m := NewMem(sessions)
	prev := []byte("version 0 of a tree-like object")
	prevID := object.HashObject(object.TypeBlob, prev)
	if err := m.Apply(t.Context(), &wal.Batch{Objects: []wal.Object{{ID: prevID, Type: object.TypeBlob, Data: prev}}}); err != nil {
		t.Fatal(err)
	}
	whole := make([]byte, 0, 128) // the builder's reused buffer
	var ids []object.Hash
	var want []string
	for i := 1; i <= memEditDepth; i++ {
		next := fmt.Sprintf("version %d of a tree-like object", i)
		whole = append(whole[:0], next...)
		id := object.HashObject(object.TypeBlob, whole)
		o := wal.Object{ID: id, Type: object.TypeBlob, Base: prevID, Edit: delta.Diff(prev, whole).Detached(), Whole: whole}
		if err := m.Apply(t.Context(), &wal.Batch{Objects: []wal.Object{o}}); err != nil {
			t.Fatal(err)
		}
		prev, prevID = []byte(next), id
		ids, want = append(ids, id), append(want, next)
	}
	if _, ok := m.edits[prevID]; ok {
		t.Fatalf("version %d is still kept as an edit; expected it whole", memEditDepth)
	}
	copy(whole, "XXXX") // the builder writes its next version
	for i, id := range ids {
		typ, got, err := m.ReadObject(t.Context(), id)
		if err != nil || typ != object.TypeBlob || string(got) != want[i] {
			t.Fatalf("version %d: read %v %q %v after the builder's buffer changed", i+1, typ, got, err)
		}
	}
	_, got, _ := m.ReadObject(t.Context(), prevID)
	got[0] = 'Y' // a reader's copy is its own too
	if _, again, _ := m.ReadObject(t.Context(), prevID); string(again) != want[len(want)-1] {
		t.Fatalf("a reader's change reached the store: %q", again)
	}
}

func TestRebuiltCacheKeepsRecentAndBoundsSize(t *testing.T) {
	var c rebuiltCache
	small := object.HashObject(object.TypeBlob, []byte("s"))
	c.put(small, []byte("s"))
	if _, ok := c.get(small); ok {
		t.Fatal("an object below rebuiltMin was cached")
	}
	big := make([]byte, rebuiltMax/4+1)
	c.put(object.ZeroHash, big)
	if _, ok := c.get(object.ZeroHash); ok {
		t.Fatal("an object above rebuiltMax/4 was cached")
	}
	data := make([]byte, 1<<20)
	var ids []object.Hash
	for i := range 20 {
		id := object.HashObject(object.TypeBlob, []byte(fmt.Sprint(i)))
		ids = append(ids, id)
		c.put(id, data)
	}
	if _, ok := c.get(ids[0]); ok {
		t.Fatal("the oldest entry survived two generations")
	}
	if _, ok := c.get(ids[19]); !ok {
		t.Fatal("the newest entry was dropped")
	}
	if _, ok := c.get(ids[8]); !ok { // in the old generation: promoted
		t.Fatal("an entry of the older generation was dropped")
	}
	if c.curBytes > rebuiltMax/2 {
		t.Fatalf("the newer generation holds %d bytes", c.curBytes)
	}
}

func TestNextFlushWait(t *testing.T) {
	every := 100 * time.Millisecond
	if got := nextFlushWait(every, 4*every, 0, busyRecords-1); got != every {
		t.Fatalf("a quiet tick waits %v, want %v", got, every)
	}
	w := every
	for range 10 {
		w = nextFlushWait(every, w, every/10, busyRecords)
	}
	if w != maxStretch*every {
		t.Fatalf("busy ticks stretch the wait to %v, want %v", w, maxStretch*every)
	}
	// A slow flush (a loaded machine) is followed by a wait as long.
	if got := nextFlushWait(every, w, 3*maxStretch*every, busyRecords); got != 3*maxStretch*every {
		t.Fatalf("after a flush of %v the wait is %v", 3*maxStretch*every, got)
	}
	if got := nextFlushWait(every, w, 3*maxStretch*every, 1); got != every {
		t.Fatalf("after a slow flush of a few records the wait is %v, want %v", got, every)
	}
}

func TestInitBareRepoIsPlainGit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r.git")
	if err := initBareRepo(dir); err != nil {
		t.Fatal(err)
	}
	if got := git(t, dir, "rev-parse", "--is-bare-repository"); got != "true" {
		t.Fatalf("git rev-parse --is-bare-repository = %s", got)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "config"))
	os.WriteFile(filepath.Join(dir, "config"), append(before, "[x]\n\ty = 1\n"...), 0o644)
	if err := initBareRepo(dir); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "config"))
	if !bytes.Contains(after, []byte("[x]")) {
		t.Fatal("a second init rewrote an existing repository")
	}
}
