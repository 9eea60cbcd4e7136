// Package manifest is a session's manifest.json (seed 002's
// SessionManifest): the list of its thought files, main chain and branches,
// and its metadata. It is rewritten in the same commit as each thought, so
// its encoder is written by hand and keeps the encoded file lists between
// thoughts; Parse reads one written by anyone.
package manifest

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Manifest is SessionManifest (seed 002), stored as manifest.json in the
// session folder and rewritten in the same commit as each thought.
type Manifest struct {
	ID           string              `json:"id"`
	Version      string              `json:"version"`
	ThoughtFiles []string            `json:"thoughtFiles"`
	BranchFiles  map[string][]string `json:"branchFiles"`
	Metadata     Meta                `json:"metadata"`

	// lists caches the encoded file lists (the bulk of the file), keyed by
	// "" for thoughtFiles and by "branch/" and the branch id (a manifest
	// from elsewhere may name a branch ""), so adding a thought appends one
	// line instead of re-encoding every name.
	lists map[string]*encodedList
}

type encodedList struct {
	n   int
	enc []byte
	// end is where the list's last entry ended in the latest encoding.
	end int
}

// Meta is the session's metadata as the manifest holds it.
type Meta struct {
	Title       string    `json:"title"`
	Description *string   `json:"description"`
	Tags        []string  `json:"tags"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`
}

// FileName is the manifest's name in a session's folder.
const FileName = "manifest.json"

// Version is the manifest format this package writes.
const Version = "1.0.0"

// New returns the manifest of a session that has no thought yet.
func New(id string) *Manifest {
	return &Manifest{ID: id, Version: Version, ThoughtFiles: []string{}, BranchFiles: map[string][]string{}}
}

// KeepOnlyBranch drops the other branches' lists from a new branch's
// manifest (forked from main's, which lists every branch): a branch's
// manifest speaks for the main chain up to its fork and for itself.
func (m *Manifest) KeepOnlyBranch(branch string) {
	for b := range m.BranchFiles {
		if b != branch {
			delete(m.BranchFiles, b)
		}
	}
}

// Encode renders the manifest as indented JSON with a trailing newline. It
// is written by hand, not by encoding/json, because it runs on every thought
// and the file lists grow with the session. The lists come before the
// metadata so that adding a thought changes the file in one place, which
// keeps the pack delta small.
func (m *Manifest) Encode() []byte { return m.EncodeInto(nil) }

// EncodeInto is Encode writing into dst's storage when it is large enough.
func (m *Manifest) EncodeInto(dst []byte) []byte {
	b := dst[:0]
	need := 512 + len(m.ThoughtFiles)*16 + len(m.Metadata.Title) + len(m.Metadata.Tags)*32
	for _, l := range m.lists {
		need += len(l.enc)
	}
	if cap(b) < need {
		b = make([]byte, 0, need+need/8+1024)
	}
	b = append(b, "{\n  \"id\": "...)
	// Go quoting is not JSON quoting (\a, \x07): a version read from
	// someone else's manifest could otherwise be rewritten unreadable.
	b = appendJSONString(b, m.ID)
	b = append(b, ",\n  \"version\": "...)
	b = appendJSONString(b, m.Version)
	b = append(b, ",\n  \"thoughtFiles\": "...)
	b = m.appendList(b, "", m.ThoughtFiles, "  ")
	b = append(b, ",\n  \"branchFiles\": {"...)
	ids := make([]string, 0, len(m.BranchFiles))
	for id := range m.BranchFiles {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n    "...)
		b = appendJSONString(b, id)
		b = append(b, ": "...)
		b = m.appendList(b, "branch/"+id, m.BranchFiles[id], "    ")
	}
	if len(ids) > 0 {
		b = append(b, "\n  "...)
	}
	b = append(b, "},\n  \"metadata\": {\n    \"title\": "...)
	b = appendJSONString(b, m.Metadata.Title)
	b = append(b, ",\n    \"description\": "...)
	if m.Metadata.Description == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *m.Metadata.Description)
	}
	b = append(b, ",\n    \"tags\": "...)
	b = appendStringList(b, m.Metadata.Tags, "    ")
	b = append(b, ",\n    \"createdAt\": \""...)
	b = m.Metadata.CreatedAt.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, "\",\n    \"updatedAt\": \""...)
	b = m.Metadata.UpdatedAt.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, "\"\n  }\n}\n"...)
	return b
}

// appendList is appendStringList through the cache; lists only grow.
func (m *Manifest) appendList(b []byte, key string, list []string, indent string) []byte {
	if len(list) == 0 {
		return append(b, "[]"...)
	}
	if m.lists == nil {
		m.lists = map[string]*encodedList{}
	}
	c := m.lists[key]
	if c == nil || c.n > len(list) {
		c = &encodedList{}
		m.lists[key] = c
	}
	for _, s := range list[c.n:] {
		if c.n > 0 {
			c.enc = append(c.enc, ',')
		}
		c.enc = append(c.enc, '\n')
		c.enc = append(c.enc, indent...)
		c.enc = append(c.enc, "  "...)
		c.enc = appendJSONString(c.enc, s)
		c.n++
	}
	b = append(b, '[')
	b = append(b, c.enc...)
	c.end = len(b)
	b = append(b, '\n')
	b = append(b, indent...)
	return append(b, ']')
}

func appendStringList(b []byte, list []string, indent string) []byte {
	if len(list) == 0 {
		return append(b, "[]"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		b = append(b, indent...)
		b = append(b, "  "...)
		b = appendJSONString(b, s)
	}
	b = append(b, '\n')
	b = append(b, indent...)
	return append(b, ']')
}

// appendJSONString quotes s as encoding/json would (without HTML escaping).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Parse reads a manifest.json, refusing one without an id or with an
// instant the encoder could not write back.
func Parse(data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if m.ID == "" {
		return nil, fmt.Errorf("manifest.json: missing id")
	}
	// The encoder writes instants in UTC; one that JSON holds only with its
	// offset (0000-01-01T00:00:00+01:00) would be rewritten as a year JSON
	// cannot hold, and the session's manifest lost with the next thought.
	for _, f := range []struct {
		name string
		t    time.Time
	}{{"metadata.createdAt", m.Metadata.CreatedAt}, {"metadata.updatedAt", m.Metadata.UpdatedAt}} {
		if y := f.t.UTC().Year(); y < 0 || y > 9999 {
			return nil, fmt.Errorf("manifest.json: %s %s is outside the years 0000 to 9999 in UTC", f.name, f.t.Format(time.RFC3339))
		}
	}
	if m.BranchFiles == nil {
		m.BranchFiles = map[string][]string{}
	}
	return &m, nil
}

// Clone returns a deep copy without the encoding cache.
func (m *Manifest) Clone() *Manifest {
	c := *m
	c.ThoughtFiles = append([]string(nil), m.ThoughtFiles...)
	c.BranchFiles = map[string][]string{}
	for k, v := range m.BranchFiles {
		c.BranchFiles[k] = append([]string(nil), v...)
	}
	c.Metadata.Tags = append([]string(nil), m.Metadata.Tags...)
	c.lists = nil
	return &c
}
