package manifest

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// manifestEqual compares manifests as JSON values: instants equal, empty
// and absent lists alike, the encoding cache ignored.
var manifestEqual = cmp.Options{cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Manifest{}, "lists"),
	cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })}

// FuzzManifest: any manifest.json that parses is written back by the
// store's hand-made encoder as JSON that parses to the same manifest, and
// writing that again gives the same bytes. A manifest that came from a
// remote or an editor is rewritten with every thought, so an encoder that
// wrote something unreadable would lose the session's file list.
func FuzzManifest(f *testing.F) {
	desc := "about"
	m := &Manifest{ID: "s1", Version: Version, ThoughtFiles: []string{"001.json", "002.json"},
		BranchFiles: map[string][]string{"alt": {"003.json"}},
		Metadata: Meta{Title: "T \"q\" é", Description: &desc, Tags: []string{"a", "b"},
			CreatedAt: time.Date(2026, 11, 22, 10, 0, 0, 5, time.UTC), UpdatedAt: time.Date(2026, 11, 22, 11, 0, 0, 0, time.UTC)}}
	f.Add(m.Encode())
	f.Add([]byte(`{"id":"x","version":"\u0007","metadata":{"createdAt":"0000-01-01T00:00:00+01:00","updatedAt":"9999-12-31T23:59:59-01:00"}}`))
	f.Add([]byte(`{"id":"x","branchFiles":{"\u2028":["\ud800"]},"metadata":{"description":null,"tags":null}}`))
	f.Add([]byte(`{"id":""}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			return
		}
		enc := m.Encode()
		if !json.Valid(enc) {
			t.Fatalf("manifest %q encodes as invalid JSON:\n%s", data, enc)
		}
		back, err := Parse(enc)
		if err != nil {
			t.Fatalf("manifest %q encodes as\n%s\nwhich does not parse: %v", data, enc, err)
		}
		if diff := cmp.Diff(m, back, manifestEqual, cmp.AllowUnexported(Manifest{})); diff != "" {
			t.Fatalf("manifest %q changed through encoding (-first +second):\n%s", data, diff)
		}
		if again := back.Encode(); !bytes.Equal(again, enc) {
			t.Fatalf("encoding is not stable:\n%s\n%s", enc, again)
		}
		// The cached lists must give what a fresh encoding gives, after an
		// append as the store does it.
		m.ThoughtFiles = append(m.ThoughtFiles, "999.json")
		cached, fresh := m.Encode(), m.Clone().Encode()
		if !bytes.Equal(cached, fresh) {
			t.Fatalf("cached encoding differs from a fresh one:\n%s\n%s", cached, fresh)
		}
	})
}
