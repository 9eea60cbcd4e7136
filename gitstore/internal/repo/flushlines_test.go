package repo

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/wal"
)

// TestFSFlushesSessionsSideBySide: sessions written side by side, each
// commit's folder tree logged as an edit of the session's previous one,
// flushed many times (and once more after a reopen, which starts without
// the previous flush's newest versions in memory), merge into packs that
// plain Git verifies, with every version of every tree readable and the
// newest of each whole.
func TestFSFlushesSessionsSideBySide(t *testing.T) {
	const sessionsN, thoughts, flushEvery = 6, 60, 13
	dir := t.TempDir()
	r := openFS(t, dir)
	ctx := t.Context()
	type line struct {
		tree   object.Tree
		treeID object.Hash
		data   []byte
		tip    object.Hash
	}
	lines := make([]line, sessionsN)
	var trees []object.Hash
	sig := object.Signature{Name: "T", Email: "t@example.com", When: time.Unix(1700000000, 0).UTC()}
	write := func(k int) {
		for s := range lines {
			l := &lines[s]
			blob := []byte(fmt.Sprintf("thought %d of session %d", k, s))
			blobID := object.HashObject(object.TypeBlob, blob)
			l.tree.Set(object.TreeEntry{Name: fmt.Sprintf("%03d.json", k), ID: blobID})
			data := l.tree.Encode()
			id := object.HashObject(object.TypeTree, data)
			o := wal.Object{ID: id, Type: object.TypeTree, Data: data}
			if l.data != nil {
				o = wal.Object{ID: id, Type: object.TypeTree, Base: l.treeID, Edit: delta.Diff(l.data, data).Detached()}
			}
			c := &object.Commit{Tree: id, Author: sig, Committer: sig, Message: fmt.Sprintf("%d\n", k)}
			if l.tip != object.ZeroHash {
				c.Parents = []object.Hash{l.tip}
			}
			cData := c.Encode()
			cID := object.HashObject(object.TypeCommit, cData)
			b := &wal.Batch{
				Objects: []wal.Object{{ID: blobID, Type: object.TypeBlob, Data: blob}, o, {ID: cID, Type: object.TypeCommit, Data: cData}},
				Updates: []wal.RefUpdate{{Name: fmt.Sprintf("%ss%d/main", sessions, s), Old: l.tip, New: cID}},
			}
			if err := r.Apply(ctx, b); err != nil {
				t.Fatal(err)
			}
			l.data, l.treeID, l.tip = data, id, cID
			trees = append(trees, id)
		}
		if k%flushEvery == flushEvery-1 {
			if err := r.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	for k := range thoughts {
		write(k)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r = openFS(t, dir)
	for k := thoughts; k < thoughts+5; k++ {
		write(k)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "fsck", "--strict", "--full")
	// Every version of every tree reads back through git.
	var in strings.Builder
	for _, id := range trees {
		in.WriteString(id.String() + "\n")
	}
	out := gitIn(t, dir, in.String(), "cat-file", "--batch-check=%(objecttype) %(objectname)")
	if got := strings.Count(out, "tree "); got != len(trees) || strings.Contains(out, "missing") {
		t.Fatalf("git reads %d of %d tree versions:\n%s", got, len(trees), out)
	}
	// The newest tree of each session is stored whole: verify-pack lists
	// a delta with its depth and base, a whole entry without.
	idx, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.idx"))
	whole := map[string]bool{}
	for _, f := range idx {
		for _, l := range strings.Split(git(t, dir, "verify-pack", "-v", f), "\n") {
			if f := strings.Fields(l); len(f) == 5 && len(f[0]) == 40 {
				whole[f[0]] = true
			}
		}
	}
	for s := range lines {
		if !whole[lines[s].treeID.String()] {
			t.Errorf("session %d's newest tree is stored as a delta", s)
		}
		if got := git(t, dir, "rev-parse", fmt.Sprintf("%ss%d/main^{tree}", sessions, s)); got != lines[s].treeID.String() {
			t.Fatalf("session %d's tree is %s, want %s", s, got, lines[s].treeID)
		}
	}
}

// gitIn runs git with stdin.
func gitIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	cmd := exec.Command("git", append([]string{"--git-dir", dir}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
