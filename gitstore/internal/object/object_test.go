package object

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

func TestHashObjectMatchesGit(t *testing.T) {
	for _, c := range []struct {
		typ  Type
		data string
	}{{TypeBlob, ""}, {TypeBlob, "hello\n"}, {TypeTree, ""}, {TypeCommit, "tree x\n\nm"}} {
		if got, want := HashObject(c.typ, []byte(c.data)), plumbing.ComputeHash(c.typ, []byte(c.data)); got != want {
			t.Errorf("HashObject(%s, %q) = %s, want %s", c.typ, c.data, got, want)
		}
	}
	// git hash-object -t blob /dev/null
	if got := HashObject(TypeBlob, nil).String(); got != "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391" {
		t.Errorf("empty blob = %s", got)
	}
}

// TestTreeOrder: a folder sorts as if its name ended in '/', as Git
// requires ("a.json" < "a/" < "a0"), and Set replaces in place.
func TestTreeOrder(t *testing.T) {
	tr := &Tree{}
	id := HashObject(TypeBlob, []byte("x"))
	for _, e := range []TreeEntry{{Name: "a0", ID: id}, {Name: "a", Dir: true, ID: id}, {Name: "a.json", ID: id}, {Name: "b", ID: id}} {
		tr.Set(e)
	}
	tr.Set(TreeEntry{Name: "b", ID: HashObject(TypeBlob, []byte("y"))})
	var names []string
	for _, e := range tr.Entries {
		names = append(names, e.Name)
	}
	if got := strings.Join(names, " "); got != "a.json a a0 b" {
		t.Fatalf("order %q, want %q", got, "a.json a a0 b")
	}
	if e, ok := tr.Get("b"); !ok || e.ID != HashObject(TypeBlob, []byte("y")) {
		t.Errorf("Get(b) = %v, %v after replacing it", e, ok)
	}
	if _, ok := tr.Get("c"); ok {
		t.Error("Get found an entry never set")
	}
	if i, ok := tr.Find("a"); !ok || !tr.Entries[i].Dir {
		t.Errorf("Find(a) = %d, %v", i, ok)
	}
	back, err := ParseTree(tr.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Entries) != 4 || back.Entries[1].Name != "a" || !back.Entries[1].Dir {
		t.Fatalf("ParseTree(Encode) = %+v", back.Entries)
	}
}

// TestEncodeFromIsExact: a tree re-encoded as an edit of its previous
// encoding gives the same bytes as a full encoding, and the edit rebuilds
// them from the previous encoding — through insertions, replacements and
// repeated changes to one entry between encodings.
func TestEncodeFromIsExact(t *testing.T) {
	tr := &Tree{}
	full := &Tree{}
	set := func(e TreeEntry) { tr.Set(e); full.Set(e) }
	for i := 0; i < 50; i++ {
		set(TreeEntry{Name: string(rune('a'+i%26)) + strings.Repeat("x", i), ID: HashObject(TypeBlob, []byte{byte(i)})})
	}
	prev := tr.Encode()
	full.Encode()
	for round := 0; round < 20; round++ {
		set(TreeEntry{Name: "new" + strings.Repeat("y", round), ID: HashObject(TypeBlob, []byte{byte(round)})})
		set(TreeEntry{Name: "bxx", Dir: round%2 == 0, ID: HashObject(TypeTree, []byte{byte(round)})})
		set(TreeEntry{Name: "bxx", ID: HashObject(TypeTree, []byte{byte(round + 1)})})
		got, ed := tr.EncodeFrom(prev)
		want := full.Encode()
		if !bytes.Equal(got, want) {
			t.Fatalf("round %d: EncodeFrom differs from Encode", round)
		}
		rebuilt, err := ed.Apply(prev)
		if err != nil || !bytes.Equal(rebuilt, want) {
			t.Fatalf("round %d: the edit does not rebuild the tree: %v", round, err)
		}
		prev = got
	}
}

// TestEncodeFromFallsBack: given a previous encoding it does not match,
// EncodeFrom still returns the right bytes and an edit that makes them.
func TestEncodeFromFallsBack(t *testing.T) {
	tr := &Tree{}
	tr.Set(TreeEntry{Name: "x", ID: HashObject(TypeBlob, nil)})
	tr.Encode()
	tr.Set(TreeEntry{Name: "y", ID: HashObject(TypeBlob, nil)})
	wrong := []byte("not the previous encoding")
	got, ed := tr.EncodeFrom(wrong)
	if rebuilt, err := ed.Apply(wrong); err != nil || !bytes.Equal(rebuilt, got) {
		t.Fatalf("fallback edit: %v", err)
	}
	back, err := ParseTree(got)
	if err != nil || len(back.Entries) != 2 {
		t.Fatalf("fallback encoding parses as %+v, %v", back, err)
	}
}

func TestCommitRoundTrip(t *testing.T) {
	when := time.Date(2026, 11, 22, 10, 0, 0, 0, time.FixedZone("", -(5*3600+30*60)))
	c := &Commit{
		Tree:      HashObject(TypeTree, nil),
		Parents:   []Hash{HashObject(TypeCommit, []byte("p1")), HashObject(TypeCommit, []byte("p2"))},
		Author:    Signature{Name: "Agent <x>", Email: "a@b\n", When: when},
		Committer: Signature{Name: "", Email: "tb@local", When: when.UTC()},
		Message:   "Thought 1: hi\x00there \xff\n",
	}
	data := c.Encode()
	want := "tree " + c.Tree.String() + "\nparent " + c.Parents[0].String() + "\nparent " + c.Parents[1].String() +
		"\nauthor Agent x <a@b> " + strconv.FormatInt(when.Unix(), 10) + " -0530\ncommitter unknown <tb@local> " + strconv.FormatInt(when.Unix(), 10) + " +0000\n\nThought 1: hi\uFFFDthere \uFFFD\n"
	if string(data) != want {
		t.Fatalf("Encode:\n%q\nwant\n%q", data, want)
	}
	p, err := ParseCommit(data)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tree != c.Tree || len(p.Parents) != 2 || p.Parents[1] != c.Parents[1] || p.Message != "Thought 1: hi\uFFFDthere \uFFFD\n" {
		t.Fatalf("ParseCommit = %+v", p)
	}
	// go-git reads what we wrote
	var gc plumbing.MemoryObject
	gc.SetType(TypeCommit)
	gc.Write(data)
	if gc.Hash() != HashObject(TypeCommit, data) {
		t.Error("go-git hashes the commit differently")
	}
}

func TestCleanIdent(t *testing.T) {
	for in, want := range map[string]string{
		"plain name":        "plain name",
		" <evil>\nname  ":   "evil name",
		"a\x00b":            "a b",
		"bad\xffutf8":       "bad utf8",
		"line\u2028sep":     "line sep",
		"next\u0085line":    "next line",
		"\t\t":              "",
		"trailing space ":   "trailing space",
		"double  space":     "double space",
		"ok-name_1.2+x@y.z": "ok-name_1.2+x@y.z",
	} {
		if got := cleanIdent(in); got != want {
			t.Errorf("cleanIdent(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseRefusals(t *testing.T) {
	for _, p := range []string{"100644 noNul", "no mode", "100644 x\x00short"} {
		if _, err := ParseTree([]byte(p)); err == nil {
			t.Errorf("ParseTree(%q) accepted", p)
		}
	}
	for _, p := range []string{"", "tree 123\n\n", "parent " + strings.Repeat("0", 40) + "\n\n", "tree " + strings.Repeat("g", 40) + "\n\n"} {
		if _, err := ParseCommit([]byte(p)); err == nil {
			t.Errorf("ParseCommit(%q) accepted", p)
		}
	}
	if _, err := ParseHash(strings.Repeat("a", 39)); err == nil {
		t.Error("ParseHash accepted 39 digits")
	}
}

// FuzzParseTreeAndCommit: decoders of objects read from a repository that
// anyone may have written must refuse garbage without panicking, and a
// tree that parses encodes back to the same bytes.
func FuzzParseTreeAndCommit(f *testing.F) {
	tr := &Tree{}
	tr.Set(TreeEntry{Name: "001.json", ID: HashObject(TypeBlob, []byte("a"))})
	tr.Set(TreeEntry{Name: "branches", Dir: true, ID: HashObject(TypeTree, nil)})
	f.Add(tr.Encode())
	c := &Commit{Tree: HashObject(TypeTree, nil), Author: Signature{Name: "a", Email: "a@b", When: time.Unix(0, 0)}, Committer: Signature{Name: "a", Email: "a@b", When: time.Unix(0, 0)}, Message: "m\n"}
	f.Add(c.Encode())
	f.Fuzz(func(t *testing.T, p []byte) {
		if pt, err := ParseTree(p); err == nil {
			// whatever modes it had, what we write back reads the same
			again, err := ParseTree(pt.Encode())
			if err != nil || len(again.Entries) != len(pt.Entries) {
				t.Fatalf("re-encoded tree does not parse back: %v", err)
			}
			for i, e := range pt.Entries {
				if g := again.Entries[i]; g.Name != e.Name || g.Dir != e.Dir || g.ID != e.ID {
					t.Fatalf("entry %d: %+v became %+v", i, e, g)
				}
			}
		}
		if pc, err := ParseCommit(p); err == nil && pc.Tree == ZeroHash {
			t.Fatal("ParseCommit accepted a commit without a tree")
		}
	})
}

// TestCommitAsFormatted compares Encode with the formatting it replaced
// (a bytes.Buffer, Hash.String and fmt's %c%02d%02d for the zone) for
// zones east and west, with minutes, beyond a day, names that need
// cleaning, and none, one or two parents: a commit's bytes are its id.
func TestCommitAsFormatted(t *testing.T) {
	formatted := func(c *Commit) string {
		var b strings.Builder
		sig := func(s Signature) {
			name := cleanIdent(s.Name)
			if name == "" {
				name = "unknown"
			}
			_, off := s.When.Zone()
			sign := '+'
			if off < 0 {
				sign, off = '-', -off
			}
			fmt.Fprintf(&b, "%s <%s> %d %c%02d%02d", name, cleanIdent(s.Email), s.When.Unix(), sign, off/3600, (off%3600)/60)
		}
		b.WriteString("tree " + c.Tree.String() + "\n")
		for _, p := range c.Parents {
			b.WriteString("parent " + p.String() + "\n")
		}
		b.WriteString("author ")
		sig(c.Author)
		b.WriteString("\ncommitter ")
		sig(c.Committer)
		b.WriteString("\n\n" + cleanMessage(c.Message))
		return b.String()
	}
	base := time.Date(2026, 11, 25, 12, 0, 0, 987654321, time.UTC)
	zones := []*time.Location{time.UTC, time.FixedZone("", 5*3600+45*60), time.FixedZone("", -(12*3600 + 30*60)),
		time.FixedZone("", 14*3600), time.FixedZone("", -59), time.FixedZone("", 100*3600+7*60), time.FixedZone("", -(123*3600 + 59*60))}
	names := []string{"", "Agent", " <odd>\n name\x00 ", "é\xff", "claude-code 1.0"}
	for i, z := range zones {
		for j, name := range names {
			c := &Commit{
				Tree:      HashObject(TypeTree, []byte{byte(i)}),
				Parents:   []Hash{HashObject(TypeCommit, []byte{byte(j)}), HashObject(TypeCommit, []byte{byte(i), byte(j)})}[:(i+j)%3],
				Author:    Signature{Name: name, Email: names[(j+1)%len(names)], When: base.In(z)},
				Committer: Signature{Name: "Thoughtbox", Email: "thoughtbox@localhost", When: base.Add(-time.Duration(i) * time.Hour).In(zones[(i+j)%len(zones)])},
				Message:   "Thought 1: " + name + "\n\nThoughtbox-Session: s\n",
			}
			if got, want := string(c.Encode()), formatted(c); got != want {
				t.Errorf("zone %d, name %q:\n%q\nwant\n%q", i, name, got, want)
			}
		}
	}
}
