package gitstore

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/repo"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/verify"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestIncomingCheckReadsOnlyTheTipsBlobs: a pull's check of a pack our
// indexer just took reads, of the blobs the new commits bring, only those
// of the tips' trees (whose thought files and manifest it parses); the
// older versions of the manifest are checked through what the indexer
// found of them (type and size), not inflated again. Every commit and
// tree is still read, and the check finds nothing wrong.
func TestIncomingCheckReadsOnlyTheTipsBlobs(t *testing.T) {
	ctx := context.Background()
	srcDir, id := indexedSource(t)
	tip := mustHash(t, strings.TrimSpace(gitOut(t, srcDir, "rev-parse", mainRef(id))))

	// Every blob the chain holds, and those of its tip's tree.
	blobs := map[hash]bool{}
	for _, line := range strings.Split(strings.TrimSpace(gitOut(t, srcDir, "rev-list", "--objects", mainRef(id))), "\n") {
		f := strings.Fields(line)
		if strings.TrimSpace(gitOut(t, srcDir, "cat-file", "-t", f[0])) == "blob" {
			blobs[mustHash(t, f[0])] = true
		}
	}
	tipBlobs := map[hash]bool{}
	for _, line := range strings.Split(strings.TrimSpace(gitOut(t, srcDir, "ls-tree", "-r", tip.String())), "\n") {
		if f := strings.Fields(line); f[1] == "blob" {
			tipBlobs[mustHash(t, f[2])] = true
		}
	}
	if len(blobs) <= len(tipBlobs) {
		t.Fatalf("the chain holds %d blobs, its tip %d: no older version to skip", len(blobs), len(tipBlobs))
	}

	dst := ingestGitPack(t, srcDir, "--revs", mainRef(id)+"\n")

	read := map[hash]bool{}
	src := countingSource{Source: dst.verifySource(), read: func(id hash) { read[id] = true }}
	problems, err := dst.checkIncomingSession(ctx, src, id, map[string]hash{mainRef(id): tip}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("problems: %q", problems)
	}
	for id := range read {
		if blobs[id] && !tipBlobs[id] {
			t.Errorf("the check read blob %s, which is not in the tip's tree: the indexer had sized and hashed it", id)
		}
	}
	for id := range tipBlobs {
		if _, ok := read[id]; !ok {
			t.Errorf("the check did not read blob %s of the tip's tree", id)
		}
	}
}

// countingSource is the store's verify.Source, calling read with each
// object whose bytes the check reads, whole or as its pack entry.
type countingSource struct {
	verify.Source
	read func(id hash)
}

func (c countingSource) ReadObject(ctx context.Context, id hash) (objType, []byte, error) {
	c.read(id)
	return c.Source.ReadObject(ctx, id)
}

func (c countingSource) ReadRaw(id hash) (pack.RawEntry, error) {
	c.read(id)
	return c.Source.ReadRaw(id)
}

func mustHash(t *testing.T, s string) hash {
	t.Helper()
	h, err := object.ParseHash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := runGit(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// indexedSource writes a session of five thoughts (each a new version of
// the manifest) into a store closed again, and returns its repository and
// the session's id.
func indexedSource(t *testing.T) (string, string) {
	t.Helper()
	if !gitInstalled() {
		t.Skip("needs git to write the remote's pack")
	}
	ctx := context.Background()
	src, err := Open(filepath.Join(t.TempDir(), "a.git"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(src, ledger.Options{})
	sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "indexed"}, ledger.Author{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two", "three", "four", "five"} {
		if _, err := l.AddThought(ctx, sess.ID, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, ledger.Author{Name: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	dir := src.be.(*repo.FS).GitDir()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, sess.ID
}

// ingestGitPack has git pack what input names (with packArg) in srcDir,
// and returns a fresh store that took the pack with our indexer.
func ingestGitPack(t *testing.T, srcDir, packArg, input string) *Store {
	t.Helper()
	cmd := exec.Command("git", "-C", srcDir, "pack-objects", packArg, "--stdout", "-q")
	cmd.Stdin = strings.NewReader(input)
	packData, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	dst, err := Open(filepath.Join(t.TempDir(), "b.git"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.Close() })
	if _, _, err := dst.IngestPack(context.Background(), bytes.NewReader(packData)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestIncomingCheckTypesIndexedBlobs: a tree of an older commit that names
// a tree as a file is refused as before, with the same words, when the
// check takes the "file"'s type from the indexer instead of reading it.
func TestIncomingCheckTypesIndexedBlobs(t *testing.T) {
	ctx := context.Background()
	srcDir, id := indexedSource(t)
	git := func(input string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", srcDir}, args...)...)
		cmd.Env = append(cmd.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@b", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@b")
		cmd.Stdin = strings.NewReader(input)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	tip := git("", "rev-parse", mainRef(id))
	root := git("", "rev-parse", tip+"^{tree}")
	empty := git("", "mktree")
	// The root with a "file" that is a tree, then the root again.
	// (git mktree refuses to write it.)
	rootBytes, err := exec.Command("git", "-C", srcDir, "cat-file", "tree", root).Output()
	if err != nil {
		t.Fatal(err)
	}
	rootData := string(rootBytes) // binary: not trimmed
	if !strings.HasPrefix(rootData, "40000 sessions\x00") {
		t.Fatalf("the root tree is %q", rootData)
	}
	emptyID := mustHash(t, empty)
	bad := git("100644 bad.json\x00"+string(emptyID[:])+rootData, "hash-object", "-t", "tree", "-w", "--stdin")
	msg := "Thought 6\n\nThoughtbox-Session: " + id + "\n"
	c1 := git(msg, "commit-tree", bad, "-p", tip)
	c2 := git(msg, "commit-tree", root, "-p", c1)
	objects := gitOut(t, srcDir, "rev-list", "--objects", tip) + strings.Join([]string{bad, empty, c1, c2}, "\n") + "\n"
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(objects), "\n") {
		ids = append(ids, strings.Fields(line)[0])
	}
	want := "corrupt object " + empty + ": the blob bad.json in commit " + c1 + "; it is a tree, not a blob"
	for _, trust := range []bool{true, false} {
		dst := ingestGitPack(t, srcDir, "-q", strings.Join(ids, "\n")+"\n")
		read := 0
		src := countingSource{Source: dst.verifySource(), read: func(id hash) {
			if id.String() == empty {
				read++
			}
		}}
		v := verify.New(ctx, src, verifyLayout, id,
			verify.Options{MaxText: 1000, FileMax: MaxIncomingFileBytes(1000), TrustIndexed: trust})
		chains := []verify.Chain{{Ref: mainRef(id), Tip: mustHash(t, c2)}}
		v.CheckTip(&chains[0])
		if err := v.Walk(chains); err != nil {
			t.Fatal(err)
		}
		if errs := v.Finish().Errors; len(errs) != 1 || errs[0] != want {
			t.Errorf("trusting the indexer %v: problems %q, want only %q", trust, errs, want)
		}
		if trust == (read > 0) {
			t.Errorf("trusting the indexer %v, the walk read the tree named as a file %d times", trust, read)
		}
	}
}
