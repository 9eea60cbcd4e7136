package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
)

// memSource is a Source over objects held in a map, with no packs: the
// check needs nothing else of a store.
type memSource map[hash]memObject

type memObject struct {
	typ  objType
	data []byte
}

func (m memSource) ReadObject(_ context.Context, id hash) (objType, []byte, error) {
	o, ok := m[id]
	if !ok {
		return 0, nil, errNotFound
	}
	return o.typ, o.data, nil
}

func (m memSource) ReadRaw(hash) (pack.RawEntry, error) { return pack.RawEntry{}, errNotFound }
func (m memSource) Indexed(hash) (objType, int, bool)   { return 0, 0, false }
func (m memSource) put(t objType, data []byte) hash {
	id := object.HashObject(t, data)
	m[id] = memObject{t, data}
	return id
}
func (m memSource) blob(text string) hash { return m.put(typeBlob, []byte(text)) }
func (m memSource) tree(entries ...object.TreeEntry) hash {
	t := &object.Tree{}
	for _, e := range entries {
		t.Set(e)
	}
	return m.put(typeTree, t.Encode())
}

// commit writes a commit of tree whose message's trailers are "key: value"
// lines, as testLayout reads them.
func (m memSource) commit(tree hash, parent hash, trailers string) hash {
	c := &object.Commit{Tree: tree, Message: "a thought\n\n" + trailers,
		Author:    object.Signature{Name: "a", Email: "a@b", When: time.Unix(1700000000, 0).UTC()},
		Committer: object.Signature{Name: "c", Email: "c@d", When: time.Unix(1700000000, 0).UTC()}}
	if parent != zeroHash {
		c.Parents = []hash{parent}
	}
	return m.put(typeCommit, c.Encode())
}

// testLayout is a layout of the test's own: JSON files and one-letter
// trailers, so that the check is seen to take every codec from its Layout.
var testLayout = Layout{
	Marks: func(msg string) Marks {
		var m Marks
		for _, line := range strings.Split(msg, "\n") {
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "S":
				m.Session = v
			case "B":
				m.Branch = v
			case "T":
				m.Thought, _ = strconv.Atoi(v)
			}
		}
		return m
	},
	Manifest: func(data []byte) (Manifest, error) {
		var m Manifest
		err := json.Unmarshal(data, &m)
		return m, err
	},
	Thought: func(data []byte) (Thought, error) {
		var t Thought
		err := json.Unmarshal(data, &t)
		return t, err
	},
	ThoughtFile: func(name string) (int, bool) {
		if !regexp.MustCompile(`^t[0-9]+$`).MatchString(name) {
			return 0, false
		}
		n, _ := strconv.Atoi(name[1:])
		return n, true
	},
}

// TestCheckThroughItsSeam checks a session held in a memSource: a whole
// one passes; a missing object, a commit of another session, a file the
// manifest leaves out, each is named as verify names it; a commit marked
// Known is not walked; and the problems are bounded.
func TestCheckThroughItsSeam(t *testing.T) {
	const id = "s1"
	// build writes a session of two thoughts; damage may change the
	// source and the tip's folder entries before the tip is written.
	build := func(damage func(m memSource, first hash, folder []object.TreeEntry) []object.TreeEntry) (memSource, hash, hash) {
		m := memSource{}
		t1 := m.blob(`{"Number": 1, "Text": "one"}`)
		t2 := m.blob(`{"Number": 2, "Text": "two"}`)
		man1 := m.blob(`{"ID": "s1", "ThoughtFiles": ["t1"]}`)
		man2 := m.blob(`{"ID": "s1", "ThoughtFiles": ["t1", "t2"]}`)
		root := func(folder ...object.TreeEntry) hash {
			return m.tree(object.TreeEntry{Name: "sessions", Dir: true, ID: m.tree(object.TreeEntry{Name: id, Dir: true, ID: m.tree(folder...)})})
		}
		c1 := m.commit(root(object.TreeEntry{Name: "manifest.json", ID: man1}, object.TreeEntry{Name: "t1", ID: t1}), zeroHash, "S: s1\nT: 1")
		folder := []object.TreeEntry{{Name: "manifest.json", ID: man2}, {Name: "t1", ID: t1}, {Name: "t2", ID: t2}}
		if damage != nil {
			folder = damage(m, c1, folder)
		}
		return m, c1, m.commit(root(folder...), c1, "S: s1\nT: 2")
	}
	check := func(src memSource, tip hash, known ...hash) Result {
		t.Helper()
		c := New(context.Background(), src, testLayout, id, Options{})
		for _, k := range known {
			c.Known(k)
		}
		chains := []Chain{{Ref: "main", Tip: tip}}
		c.CheckTip(&chains[0])
		if err := c.Walk(chains); err != nil {
			t.Fatal(err)
		}
		if chains[0].TipOK {
			c.CheckChain(&chains[0])
		}
		return c.Finish()
	}

	src, _, tip := build(nil)
	if diff := cmp.Diff(Result{ManifestExists: true, ManifestValid: true}, check(src, tip)); diff != "" {
		t.Errorf("a whole session (-want +got):\n%s", diff)
	}

	var gone hash
	src, c1, tip := build(func(m memSource, c1 hash, folder []object.TreeEntry) []object.TreeEntry {
		for oid, o := range m {
			if o.typ == typeBlob && strings.Contains(string(o.data), `["t1"]`) {
				gone = oid
				delete(m, oid) // the first manifest, which only c1 holds
			}
		}
		return folder
	})
	want := fmt.Sprintf("missing object %s: the blob sessions/s1/manifest.json in commit %s; it does not exist", gone, c1)
	if got := check(src, tip).Errors; len(got) != 1 || got[0] != want {
		t.Errorf("a missing older manifest: %q, want only %q", got, want)
	}
	if got := check(src, tip, c1).Errors; len(got) != 0 {
		t.Errorf("with its commit Known, the walk still reached it: %q", got)
	}

	src, c1, tip = build(func(m memSource, c1 hash, folder []object.TreeEntry) []object.TreeEntry {
		return append(folder, object.TreeEntry{Name: "t3", ID: m.blob(`{"Number": 3}`)})
	})
	want = fmt.Sprintf("main chain (commit %s): sessions/s1/t3 is not listed in the manifest", tip)
	if got := check(src, tip).Errors; len(got) != 1 || got[0] != want {
		t.Errorf("an unlisted file: %q, want only %q", got, want)
	}

	other := src.commit(src.tree(), zeroHash, "S: s2")
	stranger := src.commit(src.tree(object.TreeEntry{Name: "sessions", Dir: true, ID: src.tree(object.TreeEntry{Name: id, Dir: true,
		ID: src.tree(object.TreeEntry{Name: "manifest.json", ID: src.blob(`{"ID": "s1"}`)})})}), other, "S: s1")
	want = fmt.Sprintf("commit %s (the parent of commit %s) belongs to session s2", other, stranger)
	if got := check(src, stranger).Errors; len(got) != 1 || got[0] != want {
		t.Errorf("a commit of another session: %q, want only %q", got, want)
	}

	src, _, tip = build(func(m memSource, _ hash, folder []object.TreeEntry) []object.TreeEntry {
		for i := range maxVerifyErrors + 7 {
			folder = append(folder, object.TreeEntry{Name: fmt.Sprintf("x%03d", i), ID: object.HashObject(typeBlob, []byte{byte(i)})})
		}
		return folder
	})
	got := check(src, tip).Errors
	// Each extra file is missing and unlisted: two problems apiece.
	if len(got) != maxVerifyErrors+1 || got[maxVerifyErrors] != fmt.Sprintf("… and %d more problems", 2*(maxVerifyErrors+7)-maxVerifyErrors) {
		t.Errorf("%d problems, the last %q: want %d and a count of the rest", len(got), got[len(got)-1], maxVerifyErrors+1)
	}
}
