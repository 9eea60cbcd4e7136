package gitstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

func writeNB(t *testing.T, s *Store, id string, expected ledger.CommitID, msg string, files map[string][]byte) ledger.CommitID {
	t.Helper()
	tip, err := s.WriteNotebook(context.Background(), ledger.NotebookWrite{ID: id, Files: files, ExpectedTip: expected,
		Message: msg, Author: nbAuthor, When: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatalf("write %s (%s): %v", id, msg, err)
	}
	return tip
}

// TestNotebookStoreWithPlainGit writes a notebook through the store and
// reads it back with the store and with the git CLI: one commit per write,
// authored by the agent, the folder replaced whole, fsck --strict clean.
func TestNotebookStoreWithPlainGit(t *testing.T) {
	if !gitInstalled() {
		t.Skip("the git CLI is not installed; this test needs it")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	id := "nb-one"
	if _, _, err := s.ReadNotebook(ctx, id); !errors.Is(err, ledger.ErrNotebookNotFound) {
		t.Fatalf("read before create: %v, want ErrNotebookNotFound", err)
	}
	c1 := writeNB(t, s, id, "", "Create notebook nb-one", nbFiles("console.log(1)\n"))
	c2 := writeNB(t, s, id, c1, "Add cell 02-cell.ts", nbFiles("console.log(1)\n", "export const x: number = 2\n"))
	// The third write drops the first cell's file: files not given are removed.
	third := nbFiles("console.log(1)\n", "export const x: number = 2\n")
	delete(third, "cells/01-cell.ts")
	third["cells/sub/deep.md"] = []byte("# nested\n")
	c3 := writeNB(t, s, id, c2, "Delete cell 01-cell.ts\n\nThe first cell was a placeholder.", third)

	files, tip, err := s.ReadNotebook(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if tip != c3 || !maps.EqualFunc(files, third, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Errorf("read back at %s: %q\nwant at %s: %q", tip, files, c3, third)
	}

	// Compare-and-swap: a stale tip and a second create are refused, and
	// nothing moves.
	_, err = s.WriteNotebook(ctx, ledger.NotebookWrite{ID: id, Files: nbFiles(), ExpectedTip: c2, Message: "stale", Author: nbAuthor})
	if !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("write on a stale tip: %v, want ErrConflict", err)
	}
	_, err = s.WriteNotebook(ctx, ledger.NotebookWrite{ID: id, Files: nbFiles(), Message: "again", Author: nbAuthor})
	if !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("second create: %v, want ErrConflict", err)
	}
	_, err = s.WriteNotebook(ctx, ledger.NotebookWrite{ID: "nb-missing", Files: nbFiles(), ExpectedTip: c2, Message: "x", Author: nbAuthor})
	if !errors.Is(err, ledger.ErrNotebookNotFound) {
		t.Errorf("update of a notebook that does not exist: %v, want ErrNotebookNotFound", err)
	}
	for _, bad := range []map[string][]byte{
		{"../escape": nil}, {"cells/.git/x": nil}, {"/abs": nil}, {"a//b": nil},
		{"cells": []byte("x"), "cells/01.md": []byte("y")},
		{"a": []byte("x"), "a-b": nil, "a/b": nil},
	} {
		if _, err := s.WriteNotebook(ctx, ledger.NotebookWrite{ID: id, Files: bad, ExpectedTip: c3, Message: "bad"}); err == nil {
			t.Errorf("files %q were accepted", slicesOfKeys(bad))
		}
	}
	for _, bad := range []string{"", "Upper", "a/b", "a.lock", strings.Repeat("x", 65)} {
		if _, err := s.WriteNotebook(ctx, ledger.NotebookWrite{ID: bad, Files: nbFiles(), Message: "bad"}); err == nil {
			t.Errorf("notebook id %q was accepted", bad)
		}
	}
	if _, t2, _ := s.ReadNotebook(ctx, id); t2 != c3 {
		t.Errorf("refused writes moved the ref to %s", t2)
	}
	writeNB(t, s, "nb-two", "", "Create notebook nb-two", nbFiles())
	heads, err := s.ListNotebooks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(heads) != 2 || heads[0].ID != "nb-one" || heads[0].Tip != c3 || heads[1].ID != "nb-two" ||
		!heads[0].UpdatedAt.Equal(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("heads = %+v", heads)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}

	ref := "refs/heads/notebooks/" + id
	if got := gitCLI(t, dir, "log", "--format=%s|%an <%ae>|%cn", ref); got != "Delete cell 01-cell.ts|claude-code 1.0 <claude@agents.example>|Thoughtbox\n"+
		"Add cell 02-cell.ts|claude-code 1.0 <claude@agents.example>|Thoughtbox\n"+
		"Create notebook nb-one|claude-code 1.0 <claude@agents.example>|Thoughtbox\n" {
		t.Errorf("git log:\n%s", got)
	}
	if got := gitCLI(t, dir, "log", "-1", "--format=%B", ref); got != "Delete cell 01-cell.ts\n\nThe first cell was a placeholder.\n\nThoughtbox-Notebook: nb-one\n\n" {
		t.Errorf("message %q", got)
	}
	if got := gitCLI(t, dir, "show", ref+":notebooks/nb-one/cells/02-cell.ts"); got != "export const x: number = 2\n" {
		t.Errorf("git show = %q", got)
	}
	if got := gitCLI(t, dir, "ls-tree", "-r", "--name-only", ref); got != "notebooks/nb-one/cells/02-cell.ts\nnotebooks/nb-one/cells/sub/deep.md\nnotebooks/nb-one/notebook.json\n" {
		t.Errorf("tree:\n%s", got)
	}
	if got := gitCLI(t, dir, "diff", "--stat", ref+"~2", ref+"~1"); !strings.Contains(got, "notebooks/nb-one/cells/02-cell.ts | 1 +") {
		t.Errorf("diff --stat:\n%s", got)
	}
	gitCLI(t, dir, "fsck", "--strict", "--no-dangling")

	// Durable: a reopened store reads what was written.
	s.Close()
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, t2, err := s2.ReadNotebook(ctx, id); err != nil || t2 != c3 {
		t.Errorf("after reopen: %s, %v", t2, err)
	}
}

func slicesOfKeys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestNotebookStoreInMemory: the memory backend keeps notebooks with the
// same rules.
func TestNotebookStoreInMemory(t *testing.T) {
	ctx := context.Background()
	wd, _ := os.Getwd()
	before, _ := os.ReadDir(wd)
	s, err := OpenMemory(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c1 := writeNB(t, s, "mem", "", "Create notebook mem", nbFiles("1\n"))
	c2 := writeNB(t, s, "mem", c1, "Update cell 01-cell.ts", nbFiles("2\n"))
	if _, err := s.WriteNotebook(ctx, ledger.NotebookWrite{ID: "mem", Files: nbFiles(), ExpectedTip: c1}); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("stale write: %v", err)
	}
	files, tip, err := s.ReadNotebook(ctx, "mem")
	if err != nil || tip != c2 || string(files["cells/01-cell.ts"]) != "2\n" {
		t.Errorf("read: %q at %s, %v", files, tip, err)
	}
	heads, err := s.ListNotebooks(ctx)
	if err != nil || len(heads) != 1 || heads[0].Tip != c2 {
		t.Errorf("heads %+v, %v", heads, err)
	}
	after, _ := os.ReadDir(wd)
	if len(after) != len(before) {
		t.Errorf("the memory store wrote to %s", wd)
	}
}

// TestNotebookDeleteWithPlainGit deletes a notebook and reads what is
// kept with the git CLI: the ref is gone, the record's log reaches every
// commit, fsck is clean, and one update-ref brings the notebook back.
func TestNotebookDeleteWithPlainGit(t *testing.T) {
	if !gitInstalled() {
		t.Skip("the git CLI is not installed; this test needs it")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c1 := writeNB(t, s, "nb-one", "", "Create notebook nb-one", nbFiles("console.log(1)\n"))
	c2 := writeNB(t, s, "nb-one", c1, "Add cell 02-cell.ts", nbFiles("console.log(1)\n", "2\n"))
	d, err := s.DeleteNotebook(ctx, "nb-one", c2, nbAuthor, time.Date(2026, 11, 24, 13, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	want := ledger.DeletedNotebook{ID: "nb-one", Ref: "refs/heads/notebooks/nb-one", Tip: c2, Kept: "refs/thoughtbox/deleted/notebooks/nb-one/record"}
	if d != want {
		t.Errorf("deleted = %+v\nwant %+v", d, want)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := gitCLI(t, dir, "for-each-ref", "--format=%(refname)", "refs/heads/notebooks/"); got != "" {
		t.Errorf("notebook refs after the delete:\n%s", got)
	}
	if got := gitCLI(t, dir, "log", "--format=%s|%an", d.Kept); got != "Delete notebook nb-one|claude-code 1.0\nAdd cell 02-cell.ts|claude-code 1.0\nCreate notebook nb-one|claude-code 1.0\n" {
		t.Errorf("git log of the record:\n%s", got)
	}
	if got := gitCLI(t, dir, "log", "-1", "--format=%(trailers:key=Thoughtbox-Deleted,valueonly)", d.Kept); got != "2026-11-24T13:00:00Z\n\n" {
		t.Errorf("record's Thoughtbox-Deleted trailer: %q", got)
	}
	gitCLI(t, dir, "fsck", "--strict", "--no-dangling")
	// A session listing is not confused by the notebook's record.
	if list, err := s.DeletedSessions(); err != nil || len(list) != 0 {
		t.Errorf("deleted sessions: %+v, %v", list, err)
	}
	s.Close()
	gitCLI(t, dir, "update-ref", d.Ref, d.Kept+"^")
	s2, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if files, tip, err := s2.ReadNotebook(ctx, "nb-one"); err != nil || tip != c2 || string(files["cells/02-cell.ts"]) != "2\n" {
		t.Errorf("recovered with update-ref: %q at %s, %v", files, tip, err)
	}
}
