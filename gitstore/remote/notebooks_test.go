package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

var nbAuthor = ledger.Author{Name: "claude-code 1.0", Email: "claude@agents.example"}

func nbFiles(cells ...string) map[string][]byte {
	files := map[string][]byte{"notebook.json": []byte(`{"id":"nb-one","language":"typescript"}` + "\n")}
	for i, c := range cells {
		files[fmt.Sprintf("cells/%02d-cell.ts", i+1)] = []byte(c)
	}
	return files
}

func writeNB(t *testing.T, s *gitstore.Store, id string, expected ledger.CommitID, msg string, files map[string][]byte) ledger.CommitID {
	t.Helper()
	tip, err := s.WriteNotebook(context.Background(), ledger.NotebookWrite{ID: id, Files: files, ExpectedTip: expected,
		Message: msg, Author: nbAuthor, When: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	return tip
}

// TestNotebooksPushPullClone carries notebooks through a bare remote with
// both file transports: a clone gets them, an update fast-forwards, and a
// notebook changed on both sides is kept aside rather than overwritten.
func TestNotebooksPushPullClone(t *testing.T) {
	for _, builtin := range []bool{true, false} {
		t.Run(fmt.Sprintf("builtin=%v", builtin), func(t *testing.T) {
			if !builtin && !gitInstalled() {
				t.Skip("git is not installed; the builtin run covers paths")
			}
			testNotebooksPushPull(t, TransferOptions{BuiltinFile: builtin})
		})
	}
}

func testNotebooksPushPull(t *testing.T, o TransferOptions) {
	ctx := context.Background()
	remote := filepath.Join(t.TempDir(), "remote.git")
	if out, err := runGit(filepath.Dir(remote), "init", "-q", "--bare", remote); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	open := func(name string) *gitstore.Store {
		s, err := gitstore.Open(filepath.Join(t.TempDir(), name), gitstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open("a.git"), open("b.git")
	c1 := writeNB(t, a, "shared", "", "Create notebook shared", nbFiles("console.log(1)\n"))
	writeNB(t, a, "other", "", "Create notebook other", nbFiles())
	pr, err := Push(ctx, a, remote, o)
	if err != nil {
		t.Fatal(err)
	}
	var pushed []string
	for _, u := range pr.Updated {
		pushed = append(pushed, u.Ref)
	}
	if strings.Join(pushed, " ") != "refs/heads/main refs/heads/notebooks/other refs/heads/notebooks/shared" {
		t.Errorf("pushed %v", pushed)
	}
	if got, _ := runGit(remote, "log", "--format=%s", "notebooks/shared"); got != "Create notebook shared\n" {
		t.Errorf("remote log: %q", got)
	}

	res, err := Pull(ctx, b, remote, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created) != 2 || len(res.Quarantined) != 0 {
		t.Fatalf("pull: %+v", res)
	}
	files, tip, err := b.ReadNotebook(ctx, "shared")
	if err != nil || tip != c1 || string(files["cells/01-cell.ts"]) != "console.log(1)\n" {
		t.Fatalf("cloned notebook: %q at %s, %v", files, tip, err)
	}

	// A forward change travels back.
	c2 := writeNB(t, b, "shared", c1, "Update cell 01-cell.ts", nbFiles("console.log(2)\n"))
	if pr, err := Push(ctx, b, remote, o); err != nil || len(pr.Updated) != 1 || len(pr.Rejected) != 0 {
		t.Fatalf("push of the change: %+v, %v", pr, err)
	}
	if res, err := Pull(ctx, a, remote, o); err != nil || len(res.Updated) != 1 {
		t.Fatalf("pull of the change: %+v, %v", res, err)
	}
	if _, tip, _ := a.ReadNotebook(ctx, "shared"); tip != c2 {
		t.Errorf("a is at %s, want %s", tip, c2)
	}

	// Both sides change it: a's push is rejected, a's pull keeps b's
	// version aside and leaves a's own.
	c3a := writeNB(t, a, "shared", c2, "Run cell 01-cell.ts: completed", nbFiles("console.log(3)\n"))
	writeNB(t, b, "shared", c2, "Update cell 01-cell.ts", nbFiles("console.log(4)\n"))
	if _, err := Push(ctx, b, remote, o); err != nil {
		t.Fatal(err)
	}
	pr, err = Push(ctx, a, remote, o)
	if err != nil || len(pr.Rejected) != 1 || pr.Rejected[0].Ref != "refs/heads/notebooks/shared" {
		t.Fatalf("push of a diverged notebook: %+v, %v", pr, err)
	}
	res, err = Pull(ctx, a, remote, o)
	if err != nil || len(res.Diverged) != 1 || !strings.HasSuffix(res.Diverged[0].KeptAs, "/notebooks/shared") {
		t.Fatalf("pull of a diverged notebook: %+v, %v", res, err)
	}
	if _, tip, _ := a.ReadNotebook(ctx, "shared"); tip != c3a {
		t.Errorf("a's notebook was overwritten: at %s, want %s", tip, c3a)
	}
}

// TestPullQuarantinesBadNotebook: a notebook ref whose tree is not the
// notebook's folder alone (here it also carries a file at the root) is
// kept under quarantine, and a ref name outside our rule is not taken at
// all.
func TestPullQuarantinesBadNotebook(t *testing.T) {
	f := newIncomingFixture(t, true)
	f.git("checkout", "-q", "--orphan", "nb")
	if err := os.MkdirAll(filepath.Join(f.work, "notebooks", "evil", "cells"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"notebooks/evil/notebook.json":  "{}\n",
		"notebooks/evil/cells/01-a.js":  "console.log(1)\n",
		"notebooks/evil/cells/02-b.bin": "\xff\xfe",
		"stray.txt":                     "outside\n",
	} {
		if err := os.WriteFile(filepath.Join(f.work, filepath.FromSlash(name)), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.git("add", "-A")
	f.git("commit", "-q", "-m", "hand-made notebook")
	f.git("push", "-q", "origin", "nb:refs/heads/notebooks/evil")
	f.git("push", "-q", "origin", "nb:refs/heads/notebooks/Not_Ours")
	res := f.pull(TransferOptions{})
	if len(res.Quarantined) != 1 || res.Quarantined[0].Notebook != "evil" ||
		res.Quarantined[0].KeptAs != gitstore.QuarantinePrefix+"origin/notebooks/evil" && !strings.HasSuffix(res.Quarantined[0].KeptAs, "/notebooks/evil") {
		t.Fatalf("quarantined %+v", res.Quarantined)
	}
	problems := strings.Join(res.Quarantined[0].Problems, "; ")
	for _, want := range []string{"stray.txt is outside notebooks/evil/", "02-b.bin is not UTF-8"} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems %q lack %q", problems, want)
		}
	}
	if h, _ := f.b.ReadRef("refs/heads/notebooks/evil"); h != zeroHash {
		t.Errorf("notebook ref moved to %s", h)
	}
	if h, _ := f.b.ReadRef("refs/heads/notebooks/Not_Ours"); h != zeroHash {
		t.Errorf("a ref outside the naming rule was taken: %s", h)
	}
	if len(res.Created) != 2 {
		t.Errorf("created %+v, want the two sessions", res.Created)
	}
}

// TestPullQuarantinesOversizedNotebookHistory: a file over the size limit
// in an older commit is caught even though the tip no longer has it.
func TestPullQuarantinesOversizedNotebookHistory(t *testing.T) {
	f := newIncomingFixture(t, true)
	f.git("checkout", "-q", "--orphan", "nb")
	dir := filepath.Join(f.work, "notebooks", "big")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "notebook.json"), []byte("{}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "blob.txt"), []byte(strings.Repeat("x", 5000)), 0o644)
	f.git("add", "-A")
	f.git("commit", "-q", "-m", "big file")
	f.git("rm", "-q", "notebooks/big/blob.txt")
	f.git("commit", "-q", "-m", "gone again")
	f.git("push", "-q", "origin", "nb:refs/heads/notebooks/big")
	res := f.pull(TransferOptions{MaxThoughtBytes: 4000})
	if len(res.Quarantined) != 1 || res.Quarantined[0].Notebook != "big" ||
		!strings.Contains(strings.Join(res.Quarantined[0].Problems, " "), "blob.txt is 5000 bytes") {
		t.Fatalf("quarantined %+v", res.Quarantined)
	}
	if h, _ := f.b.ReadRef("refs/heads/notebooks/big"); h != zeroHash {
		t.Errorf("notebook ref moved to %s", h)
	}
}
