package ledger_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/ledger"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from what the code produces")

// fixture is a hand-made session in testdata/sessions: its metadata and
// the thoughts to record, in order, as an agent would send them.
type fixture struct {
	Title       string                `json:"title"`
	Description string                `json:"description"`
	Tags        []string              `json:"tags"`
	Thoughts    []ledger.ThoughtInput `json:"thoughts"`
}

// fixtureClock ticks thirty seconds per reading, so that durations and
// densities look like an agent's.
type fixtureClock struct{ t atomic.Int64 }

func (c *fixtureClock) now() time.Time {
	return time.Unix(c.t.Add(30), 0).UTC()
}

// exportTime is when the golden exports and analyses are made.
var exportTime = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

// fixtures is a ledger holding every session of testdata/sessions, in the
// order of their file names, with ids 0a000000-…-00000000000N.
type fixtures struct {
	l     *ledger.Ledger
	store *fakeStore
	ids   map[string]string // file name without .json → session id
	names []string
}

func loadFixtures(t *testing.T) *fixtures {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "sessions", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	clock := &fixtureClock{}
	clock.t.Store(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).Unix())
	var seq atomic.Int64
	f := &fixtures{store: newFakeStore(), ids: map[string]string{}}
	f.l = ledger.New(f.store, ledger.Options{
		Now:   clock.now,
		NewID: func() string { return fmt.Sprintf("0a000000-0000-4000-8000-%012d", seq.Add(1)) },
	})
	ctx := context.Background()
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var fx fixture
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fx); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		s, err := f.l.StartSession(ctx, ledger.CreateSessionParams{Title: fx.Title, Description: fx.Description, Tags: fx.Tags}, agent)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for i, in := range fx.Thoughts {
			if _, err := f.l.AddThought(ctx, s.ID, in, agent); err != nil {
				t.Fatalf("%s: thought %d: %v", file, i+1, err)
			}
		}
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		f.ids[name] = s.ID
		f.names = append(f.names, name)
	}
	return f
}

func (f *fixtures) view(t *testing.T, name string) *ledger.SessionView {
	t.Helper()
	id, ok := f.ids[name]
	if !ok {
		t.Fatalf("no fixture %q", name)
	}
	v, err := f.l.View(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// golden compares got with testdata/golden/name, or rewrites the file
// with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./ledger -run %s -update to create it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got); go test -update rewrites it if the change is intended:\n%s", path, diff)
	}
}

func indentJSON(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGolden renders every fixture in every export format and every
// analysis, against the golden files.
func TestGolden(t *testing.T) {
	f := loadFixtures(t)
	for _, name := range f.names {
		t.Run(name, func(t *testing.T) {
			v := f.view(t, name)
			for _, format := range []ledger.ExportFormat{ledger.ExportJSON, ledger.ExportMarkdown, ledger.ExportCipher} {
				out, err := ledger.Export(v, ledger.ExportOptions{Format: format, At: exportTime})
				if err != nil {
					t.Fatal(err)
				}
				golden(t, name+".export."+format.Extension(), out)
			}
			anchors, err := f.l.ResolveAnchors(context.Background(), v)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, name+".anchors.json", indentJSON(t, anchors))
			golden(t, name+".analysis.json", indentJSON(t, ledger.Analyze(v)))
			golden(t, name+".deep.json", indentJSON(t, ledger.DeepAnalysis(v, ledger.DeepFull, exportTime)))
			golden(t, name+".learnings.json", indentJSON(t, ledger.ExtractLearnings(v, exportTime)))
		})
	}
}
