package durable

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCreateWholeSeenWhole: readers that list the directory and read every
// file while files are being created never see one short, and no
// temporary file is left once the writers are done.
func TestCreateWholeSeenWhole(t *testing.T) {
	dir := t.TempDir()
	doc := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: written in several chunks
	const files = 20
	var done atomic.Bool
	var wg sync.WaitGroup
	var seen atomic.Int64
	errs := make(chan error, 4)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				ents, err := os.ReadDir(dir)
				if err != nil {
					errs <- err
					return
				}
				for _, e := range ents {
					if strings.HasPrefix(e.Name(), ".") {
						continue
					}
					b, err := os.ReadFile(filepath.Join(dir, e.Name()))
					if err != nil {
						errs <- err
						return
					}
					if len(b) != len(doc) {
						errs <- fmt.Errorf("%s read with %d bytes, want %d", e.Name(), len(b), len(doc))
						return
					}
					seen.Add(1)
				}
			}
		}()
	}
	for i := 0; i < files; i++ {
		if err := CreateWhole(filepath.Join(dir, fmt.Sprintf("f%02d.json", i)), doc); err != nil {
			t.Fatal(err)
		}
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != files {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("directory holds %v, want only the %d files", names, files)
	}
	t.Logf("readers read %d whole files", seen.Load())
}

// TestCreateWholeNeverReplaces: a path that exists is refused with
// fs.ErrExist and keeps its content.
func TestCreateWholeNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x")
	if err := CreateWhole(p, []byte("first")); err != nil {
		t.Fatal(err)
	}
	err := CreateWhole(p, []byte("second"))
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second CreateWhole error = %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "first" {
		t.Fatalf("content = %q, want first", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("directory holds %d entries, want 1 (no temporary left)", len(ents))
	}
}

// TestCreateWholeSyncsTheDirectory: the new name is made durable — the
// directory is synced once the file is linked into it — so a completion
// export (export.Completed) or any other CreateWhole file that was
// reported written survives a power cut.
func TestCreateWholeSyncsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "export.json")
	var synced []string
	dirSynced = func(d string) {
		if _, err := os.Stat(path); err != nil {
			t.Errorf("directory %s synced before the file was linked: %v", d, err)
		}
		synced = append(synced, d)
	}
	defer func() { dirSynced = nil }()
	if err := CreateWhole(path, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 1 || synced[0] != dir {
		t.Fatalf("directories synced: %q, want [%q]", synced, dir)
	}
}
