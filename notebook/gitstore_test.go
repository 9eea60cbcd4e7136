package notebook_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/notebook"
)

// TestOnGitStore runs a notebook's life on the real store and reads the
// result with plain git: one commit per change, a cell edit a diff of its
// file.
func TestOnGitStore(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	dir := t.TempDir()
	st, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	author := ledger.Author{Name: "claude", Email: "claude@agents.invalid"}
	svc := notebook.NewService(st, notebook.Options{WorkDir: t.TempDir()})
	defer svc.Close()
	ctx := t.Context()
	nb, err := svc.Create(ctx, notebook.CreateRequest{Name: "Feynman on git", Template: "sequential-feynman", Author: author})
	if err != nil {
		t.Fatal(err)
	}
	results, err := svc.RunAll(ctx, nb.ID, author)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Status != notebook.StatusCompleted {
			t.Fatalf("%s: %s %v", r.Filename, r.Status, r.Error)
		}
	}
	if _, _, err := svc.UpdateCell(ctx, notebook.UpdateCellRequest{NotebookID: nb.ID, CellID: "explain.ts", Content: "export const binarySearch = () => ({ index: -1, looks: 0 });\n", Author: author}); err != nil {
		t.Fatal(err)
	}
	text, err := svc.Export(ctx, nb.ID)
	if err != nil {
		t.Fatal(err)
	}
	back, err := svc.Import(ctx, text, author)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := svc.Export(ctx, back.ID); again != text {
		t.Fatal("export → import → export differs on the git store")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"--git-dir", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	ref := "refs/heads/notebooks/" + nb.ID
	log := strings.Split(strings.TrimSpace(git("log", "--format=%an|%s", ref)), "\n")
	want := []string{
		"claude|Update cell 05-explain.ts",
		"claude|Run all cells: 3 completed",
		"claude|Create notebook feynman-on-git from template sequential-feynman (typescript)",
	}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Fatalf("git log %s:\n%s\nwant:\n%s", ref, strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
	diff := git("diff", "--stat", ref+"~1", ref)
	if !strings.Contains(diff, "cells/05-explain.ts") || !strings.Contains(diff, "notebook.json") || strings.Count(diff, "|") != 2 {
		t.Fatalf("the edit's diff:\n%s", diff)
	}
	if got := git("show", ref+":notebooks/"+nb.ID+"/cells/05-explain.ts"); !strings.HasPrefix(got, "export const binarySearch = () =>") {
		t.Fatalf("cell file at the tip: %q", got)
	}
}

// BenchmarkGitStoreCreate and BenchmarkGitStoreAddCell are Create and
// AddCell on the on-disk gitstore: what a client waits for, a durable
// commit included.
func BenchmarkGitStoreCreate(b *testing.B) {
	svc := gitBenchService(b)
	for i := 0; b.Loop(); i++ {
		if _, err := svc.Create(b.Context(), notebook.CreateRequest{Name: "bench " + strconv.Itoa(i), Template: "sequential-feynman", Author: benchAuthor}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGitStoreAddCell(b *testing.B) {
	svc := gitBenchService(b)
	var id string
	for i := 0; b.Loop(); i++ {
		if i%100 == 0 {
			b.StopTimer()
			nb, err := svc.Create(b.Context(), notebook.CreateRequest{Name: "bench", Template: "sequential-feynman", Author: benchAuthor})
			if err != nil {
				b.Fatal(err)
			}
			id = nb.ID
			b.StartTimer()
		}
		if _, _, err := svc.AddCell(b.Context(), notebook.AddCellRequest{NotebookID: id, Type: "code", Content: "console.log(1 + 1);\n", Author: benchAuthor}); err != nil {
			b.Fatal(err)
		}
	}
}

var benchAuthor = ledger.Author{Name: "bench", Email: "bench@agents.invalid"}

func gitBenchService(b *testing.B) *notebook.Service {
	st, err := gitstore.Open(b.TempDir(), gitstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	svc := notebook.NewService(st, notebook.Options{WorkDir: b.TempDir()})
	b.Cleanup(func() {
		svc.Close()
		st.Close()
	})
	return svc
}

// TestDeleteOnGitStore deletes a notebook on the real store: it leaves the
// listing, and plain git still reads its whole history from the record.
func TestDeleteOnGitStore(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	dir := t.TempDir()
	st, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	author := ledger.Author{Name: "claude", Email: "claude@agents.invalid"}
	svc := notebook.NewService(st, notebook.Options{WorkDir: t.TempDir()})
	defer svc.Close()
	nb, err := svc.Create(t.Context(), notebook.CreateRequest{Name: "Scratch", Author: author})
	if err != nil {
		t.Fatal(err)
	}
	d, err := svc.Delete(t.Context(), nb.ID, author)
	if err != nil {
		t.Fatal(err)
	}
	if list, err := svc.List(t.Context()); err != nil || len(list) != 0 {
		t.Errorf("notebooks after the delete: %+v, %v", list, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "--git-dir", dir, "log", "--format=%s", d.Kept).CombinedOutput()
	if want := "Delete notebook scratch\nCreate notebook scratch from template blank (typescript)\n"; err != nil || string(out) != want {
		t.Errorf("git log %s: %v\n%s\nwant:\n%s", d.Kept, err, out, want)
	}
}
