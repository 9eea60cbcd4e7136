package gitstore

// Fuzz targets for the decoders of bytes this package did not write itself:
// thought files (a repository edited by hand or pulled from someone else)
// and pack streams (whatever a remote sends); the log's record decoder has
// its own in internal/wal, the manifest's in internal/manifest. Plain
// `go test` runs their seed corpora and the crashers kept under
// testdata/fuzz; BENCHMARKS.md ("Fuzzing") says
// how long each ran and what it found.

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	fastjson "github.com/segmentio/encoding/json"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/delta"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/repo"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// allocated returns how many bytes f allocated on the heap. The fuzz
// workers run one input at a time (-parallel 1), so nearly all of it is f's.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// thoughtEqual compares thought files as JSON values.
var thoughtEqual = cmp.Options{cmpopts.EquateEmpty(), cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })}

// FuzzThoughtFile: a thought file is decoded two ways — decodeThoughtFile
// (a faster JSON library) when a session loads, encoding/json when a chain
// is caught up, critiqued or verified — so on any file they must agree:
// both refuse it, or both read the same thought. What they read is written back (as the
// store writes a critiqued thought) and read again unchanged.
func FuzzThoughtFile(f *testing.F) {
	n := 2
	td := ledger.ThoughtData{Thought: "S2|H|S1|if [S1] holds then \"x\"\n\ttab é \u2028", ThoughtNumber: 3, TotalThoughts: 5,
		NextThoughtNeeded: true, IsRevision: true, RevisesThought: &n, BranchFromThought: &n, BranchID: "alt",
		Timestamp: time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC),
		Critique:  &ledger.Critique{Model: "m", Text: "t", Timestamp: time.Date(2026, 11, 22, 10, 0, 1, 0, time.UTC)},
		RLM:       &ledger.RLMResult{Query: "q", Status: "ok", Transcript: []ledger.RLMStep{{}}}}
	file, _ := json.MarshalIndent(td, "", "  ")
	f.Add(file)
	f.Add([]byte(`{"thought":"a\u0000b","thoughtNumber":1,"totalThoughts":1,"nextThoughtNeeded":false,"timestamp":"2026-11-22T10:00:00Z"}`))
	f.Add([]byte(`{"thought":"\xff\xfe","ThoughtNumber":1e0,"THOUGHT":"x","timestamp":"2026-11-22T10:00:00+14:00"}`))
	f.Add([]byte(`{"thoughtNumber":1,"thoughtNumber":2,"revisesThought":null,"critique":null,"rlm":{"transcript":null}}`))
	f.Add([]byte(`{"thoughtNumber":9223372036854775808}`))
	f.Add([]byte(`{"thought":"\ud83d\ude00\ud800"} `))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, std ledger.ThoughtData
		errFast := decodeThoughtFile(data, &fast)
		errStd := json.Unmarshal(data, &std)
		if (errFast == nil) != (errStd == nil) {
			t.Fatalf("%q: the loader says %v, encoding/json says %v", data, errFast, errStd)
		}
		if errStd != nil {
			return
		}
		if diff := cmp.Diff(std, fast, thoughtEqual); diff != "" {
			t.Fatalf("%q: the two decoders disagree (-encoding/json +loader):\n%s", data, diff)
		}
		out, err := json.MarshalIndent(std, "", "  ")
		if err != nil {
			return // a timestamp JSON cannot hold (year beyond 9999): refused, not mangled
		}
		var back ledger.ThoughtData
		if err := fastjson.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q rewritten as %s does not load: %v", data, out, err)
		}
		if diff := cmp.Diff(std, back, thoughtEqual); diff != "" {
			t.Fatalf("%q changed when rewritten (-first +second):\n%s", data, diff)
		}
	})
}

// FuzzPackStream feeds arbitrary bytes to the code that stores a pack
// received by pull, on both backends, without a network. The body is the
// pack without its trailing SHA-1; when fix is set the harness appends the
// right one, so that the fuzzer explores the entries rather than the
// checksum. Nothing may panic, memory stays in proportion to the input, and
// every object of a pack the disk backend accepts is then read back by the
// store's own pack reader with the content its id names.
func FuzzPackStream(f *testing.F) {
	for _, objs := range [][]pack.Object{packSeed(), packSeed()[:1], nil} {
		dir := f.TempDir()
		name, err := pack.Write(dir, objs)
		if err != nil {
			f.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "pack-"+name.String()+".pack"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[:len(data)-20], true)
	}
	f.Add([]byte("PACK\x00\x00\x00\x02\xff\xff\xff\xff"), true)
	f.Add([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x01\xbf\xff\xff\xff\xff\xff\xff\xff\x7f"), true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, body []byte, fix bool) {
		p := body
		if fix {
			sum := sha1.Sum(body)
			p = append(append([]byte(nil), body...), sum[:]...)
		}
		limit := uint64(64<<20 + 2048*len(p))
		ctx := context.Background()

		mem, err := OpenMemory(Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer mem.Close()
		if used := allocated(func() { mem.IngestPack(ctx, bytes.NewReader(p)) }); used > limit {
			t.Fatalf("memory backend: a %d-byte pack allocated %d bytes", len(p), used)
		}

		gitDir := t.TempDir()
		be, err := repo.OpenFS(gitDir, repo.FSOptions{FlushEvery: time.Hour, LockTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close()
		var n int
		used := allocated(func() { n, _, err = be.IngestPack(ctx, filepath.Join(gitDir, "transfer"), bytes.NewReader(p)) })
		if used > limit {
			t.Fatalf("disk backend: a %d-byte pack allocated %d bytes", len(p), used)
		}
		if err != nil || n == 0 {
			return
		}
		if n := len(be.Packs().Packs()); n != 1 {
			t.Fatalf("%d packs after storing one", n)
		}
		idx, err := be.Packs().Packs()[0].Index()
		if err != nil {
			t.Fatal(err)
		}
		for i := range idx.Count() {
			e, err := idx.Entry(i)
			if err != nil {
				t.Fatal(err)
			}
			var typ objType
			var data []byte
			used := allocated(func() { typ, data, err = be.Packs().Read(e.ID) })
			if used > limit {
				t.Fatalf("reading %s allocated %d bytes", e.ID, used)
			}
			if err != nil {
				t.Fatalf("object %s of an accepted pack does not read: %v", e.ID, err)
			}
			if got := object.HashObject(typ, data); got != e.ID {
				t.Fatalf("object %s reads as %s %s", e.ID, typ, got)
			}
		}
	})
}

// packSeed is a few objects of each kind, one of them a delta, as the
// flusher writes them.
func packSeed() []pack.Object {
	v1 := []byte("line one\nline two\nline three\n")
	v2 := []byte("line one\nline 2\nline three\nline four\n")
	tr := &object.Tree{}
	tr.Set(object.TreeEntry{Name: "001.json", ID: object.HashObject(typeBlob, v1)})
	c := &object.Commit{Tree: object.HashObject(typeTree, tr.Encode()), Author: object.Signature{Name: "a", Email: "a@b", When: time.Unix(0, 0)},
		Committer: object.Signature{Name: "a", Email: "a@b", When: time.Unix(0, 0)}, Message: "m\n"}
	return []pack.Object{
		{ID: object.HashObject(typeBlob, v1), Type: typeBlob, Data: v1, Base: -1},
		{ID: object.HashObject(typeBlob, v2), Type: typeBlob, Base: 0, Delta: delta.Diff(v1, v2).GitDelta(len(v1))},
		{ID: object.HashObject(typeTree, tr.Encode()), Type: typeTree, Data: tr.Encode(), Base: -1},
		{ID: object.HashObject(typeCommit, c.Encode()), Type: typeCommit, Data: c.Encode(), Base: -1},
	}
}
