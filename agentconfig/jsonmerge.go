package agentconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
)

// member is one key of a JSON object, its value kept as written: the
// objects we edit keep their keys in the user's order, and values we do
// not own are copied, not decoded and re-encoded.
type member struct {
	key   string
	value json.RawMessage
}

// parseObject reads data, which must be one JSON object and nothing else.
func parseObject(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, notJSON(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notJSON(err)
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, notJSON(err)
		}
		out = append(out, member{key, v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, notJSON(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not JSON: more after the top-level object")
	}
	return out, nil
}

func notJSON(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		return errors.New("not JSON: it ends too early")
	}
	// VS Code's mcp.json may hold comments (JSONC): rewriting it would
	// lose them, so such a file is refused like any other.
	return fmt.Errorf("not JSON (comments and trailing commas are not supported here): %v", err)
}

// index is the position of key in m, -1 if absent; a key given twice is
// an error (readers disagree about which one wins).
func index(m []member, key, where string) (int, error) {
	at := -1
	for i := range m {
		if m[i].key == key {
			if at >= 0 {
				return 0, fmt.Errorf("%s%q appears twice", where, key)
			}
			at = i
		}
	}
	return at, nil
}

// objectAt parses m[i] as an object, naming path when it is not one.
func objectAt(m []member, i int, path string) ([]member, error) {
	if i < 0 {
		return nil, nil
	}
	if bytes.Equal(bytes.TrimSpace(m[i].value), []byte("null")) {
		return nil, nil
	}
	obj, err := parseObject(m[i].value)
	if err != nil {
		return nil, fmt.Errorf("%s is not a JSON object", path)
	}
	return obj, nil
}

// mergeJSON puts our entry under servers[name] in data: the fields of
// want are set, every other key anywhere stays. The outcome is Unchanged
// (and data is returned as it was, byte for byte) when every field of
// want already holds the same value.
func mergeJSON(data []byte, servers, name string, want []field) ([]byte, Outcome, error) {
	var top []member
	if len(bytes.TrimSpace(data)) > 0 {
		var err error
		if top, err = parseObject(data); err != nil {
			return nil, 0, err
		}
	}
	si, err := index(top, servers, "")
	if err != nil {
		return nil, 0, err
	}
	list, err := objectAt(top, si, servers)
	if err != nil {
		return nil, 0, err
	}
	ei, err := index(list, name, servers+": ")
	if err != nil {
		return nil, 0, err
	}
	entry, err := objectAt(list, ei, servers+"."+name)
	if err != nil {
		return nil, 0, err
	}
	if err := remoteEntry(entry, servers+"."+name); err != nil {
		return nil, 0, err
	}
	outcome := Unchanged
	if ei < 0 {
		outcome = Added
	}
	for _, f := range want {
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, 0, err
		}
		fi, err := index(entry, f.key, servers+"."+name+": ")
		if err != nil {
			return nil, 0, err
		}
		switch {
		case fi < 0:
			entry = append(entry, member{f.key, v})
		case sameJSON(entry[fi].value, v):
			continue
		default:
			entry[fi].value = v
		}
		if outcome == Unchanged {
			outcome = Updated
		}
	}
	if outcome == Unchanged {
		return data, Unchanged, nil
	}
	list = set(list, ei, name, encodeObject(entry))
	top = set(top, si, servers, encodeObject(list))
	var out bytes.Buffer
	if err := json.Indent(&out, encodeObject(top), "", "  "); err != nil {
		return nil, 0, err
	}
	out.WriteByte('\n')
	return out.Bytes(), outcome, nil
}

func set(m []member, i int, key string, v json.RawMessage) []member {
	if i < 0 {
		return append(m, member{key, v})
	}
	m[i].value = v
	return m
}

// encodeObject writes m compactly; Indent lays the whole file out after.
func encodeObject(m []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.key)
		b.Write(k)
		b.WriteByte(':')
		if err := json.Compact(&b, e.value); err != nil {
			b.Write(e.value) // already checked by parseObject
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// sameJSON says whether two JSON values mean the same, however spelled.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// ErrRemoteEntry is returned for an entry of ours that reaches a server by
// URL (a shared `thoughtbox serve`): turning it into a command would
// silently drop the user's choice, so it is left for them to decide.
var ErrRemoteEntry = errors.New("connects to a server by URL")

// remoteEntry refuses an entry that names a URL or a transport other than
// stdio.
func remoteEntry(entry []member, path string) error {
	for _, m := range entry {
		switch m.key {
		case "url", "httpUrl", "serverUrl":
			return fmt.Errorf("%s %w (%s); enable writes a command entry: remove that entry to have it written, or leave this agent out", path, ErrRemoteEntry, m.key)
		case "type":
			var typ string
			if json.Unmarshal(m.value, &typ) == nil && typ != "stdio" {
				return fmt.Errorf("%s %w (type %q); enable writes a command entry: remove that entry to have it written, or leave this agent out", path, ErrRemoteEntry, typ)
			}
		}
	}
	return nil
}
