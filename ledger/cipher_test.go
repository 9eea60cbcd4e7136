package ledger_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func TestParseCipher(t *testing.T) {
	tests := []struct {
		in   string
		want *ledger.CipherInfo // nil: not cipher
	}{
		{"S1|O|User reports slow page loads",
			&ledger.CipherInfo{Step: 1, Type: "O", Content: "User reports slow page loads"}},
		{"S13|E|S12|Logs show 500ms queries",
			&ledger.CipherInfo{Step: 13, Type: "E", Refs: []ledger.CipherRef{{Thought: 12}}, Content: "Logs show 500ms queries"}},
		{"S14|C|S12,S13|DB needs indexing",
			&ledger.CipherInfo{Step: 14, Type: "C", Refs: []ledger.CipherRef{{Thought: 12}, {Thought: 13}}, Content: "DB needs indexing"}},
		{"S16|R|^S12|Actually network issue",
			&ledger.CipherInfo{Step: 16, Type: "R", Refs: []ledger.CipherRef{{Thought: 12, Revision: true}}, Content: "Actually network issue"}},
		{"S16|R|^[S12], [S3]|Actually network issue",
			&ledger.CipherInfo{Step: 16, Type: "R", Refs: []ledger.CipherRef{{Thought: 12, Revision: true}, {Thought: 3}}, Content: "Actually network issue"}},
		{"S6|C|S4,S5|∴ Add index on users.email",
			&ledger.CipherInfo{Step: 6, Type: "C", Refs: []ledger.CipherRef{{Thought: 4}, {Thought: 5}}, Content: "∴ Add index on users.email"}},
		{"7|P||1. Create migration | 2. Apply",
			&ledger.CipherInfo{Step: 7, Type: "P", Content: "1. Create migration | 2. Apply"}},
		{"S17|P|1. Add index 2. Test | 3. Deploy",
			&ledger.CipherInfo{Step: 17, Type: "P", Content: "1. Add index 2. Test | 3. Deploy"}},
		{" S2 | H | S1 | Database queries causing latency ",
			&ledger.CipherInfo{Step: 2, Type: "H", Refs: []ledger.CipherRef{{Thought: 1}}, Content: "Database queries causing latency"}},
		{"S9|C|S8|follows from [S2] ⊕ ^[S4] and [S8]\nsecond line\n",
			&ledger.CipherInfo{Step: 9, Type: "C", Refs: []ledger.CipherRef{{Thought: 8}, {Thought: 2, Inline: true}, {Thought: 4, Revision: true, Inline: true}},
				Content: "follows from [S2] ⊕ ^[S4] and [S8]\nsecond line"}},
		{"S15|Q|S3", &ledger.CipherInfo{Step: 15, Type: "Q", Content: "S3"}},
		// Not cipher: kept as plain text.
		{"Just a thought", nil},
		{"S1|Z|unknown marker", nil},
		{"S1|h|lower-case marker", nil},
		{"S0|H|step zero", nil},
		{"Sx|H|not a number", nil},
		{"S1|H|", nil},
		{"S1|H|S2|", nil},
		{"S1|H", nil},
		{"S99999999999|H|too big", nil},
		{"", nil},
	}
	for _, tt := range tests {
		got, ok := ledger.ParseCipher(tt.in)
		if tt.want == nil {
			if ok {
				t.Errorf("ParseCipher(%q) = %+v, want not cipher", tt.in, got)
			}
			continue
		}
		if !ok {
			t.Errorf("ParseCipher(%q): not cipher, want %+v", tt.in, *tt.want)
			continue
		}
		if diff := cmp.Diff(*tt.want, got); diff != "" {
			t.Errorf("ParseCipher(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestParseCipherType(t *testing.T) {
	for _, in := range []string{"H", "h", "hypothesis", "Hypothesis"} {
		if got, ok := ledger.ParseCipherType(in); !ok || got != ledger.CipherHypothesis {
			t.Errorf("ParseCipherType(%q) = %q, %v", in, got, ok)
		}
	}
	if _, ok := ledger.ParseCipherType("Z"); ok {
		t.Errorf("ParseCipherType(Z) accepted")
	}
	if len(ledger.CipherTypes()) != 9 {
		t.Errorf("CipherTypes() = %v, want the nine markers", ledger.CipherTypes())
	}
}

func TestGraphCipherReferences(t *testing.T) {
	e := setup(t)
	id := e.start(t)
	e.add(t, id, th("S1|O|User reports slow page loads"))
	e.add(t, id, th("S2|H|S1|Database queries causing latency"))
	e.add(t, id, th("plain text, no cipher"))
	e.add(t, id, th("S4|C|S2,S3,S9|∴ add an index")) // S9 does not exist yet
	e.add(t, id, onBranch(th("S5|X|^S2|rejected on reflection, see [S1]"), "alt", 2))

	check := func(t *testing.T, g *ledger.Graph) {
		t.Helper()
		n4, _ := g.Thought(4)
		if n4.Cipher == nil {
			t.Fatalf("thought 4 has no cipher info")
		}
		want := []ledger.CipherRef{{Thought: 2, Node: id + ":2"}, {Thought: 3, Node: id + ":3"}, {Thought: 9}}
		if diff := cmp.Diff(want, n4.Cipher.Refs); diff != "" {
			t.Errorf("thought 4 refs (-want +got):\n%s", diff)
		}
		if n3, _ := g.Thought(3); n3.Cipher != nil {
			t.Errorf("plain thought 3 has cipher info %+v", n3.Cipher)
		}
		b, _ := g.BranchThought("alt", 3)
		if b.Cipher == nil || b.Cipher.Type != ledger.CipherRejected {
			t.Fatalf("branch thought cipher = %+v", b.Cipher)
		}
		wantB := []ledger.CipherRef{{Thought: 2, Revision: true, Node: id + ":2"}, {Thought: 1, Inline: true, Node: id + ":1"}}
		if diff := cmp.Diff(wantB, b.Cipher.Refs); diff != "" {
			t.Errorf("branch refs (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{id + ":4", id + ":alt:3"}, g.ReferencedBy(id+":2")); diff != "" {
			t.Errorf("ReferencedBy(2) (-want +got):\n%s", diff)
		}
		if got := g.ReferencedBy(id + ":4"); len(got) != 0 {
			t.Errorf("ReferencedBy(4) = %v, want none", got)
		}
	}
	t.Run("incremental", func(t *testing.T) { check(t, e.view(t, id).Graph) })
	t.Run("rebuilt", func(t *testing.T) {
		v, err := e.l.Load(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		check(t, v.Graph)
	})

	n2, _ := e.view(t, id).Graph.Thought(2)
	b, err := json.Marshal(n2)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"cipher":{"step":2,"type":"H","refs":[{"thought":1,"node":"`+id+`:1"}]`) {
		t.Errorf("node JSON lacks cipher info: %s", b)
	}
}

// A snapshot taken before a reference arrives does not see it.
func TestGraphCipherSnapshot(t *testing.T) {
	e := setup(t)
	id := e.start(t)
	e.add(t, id, th("S1|O|seen"))
	before := e.view(t, id).Graph
	e.add(t, id, th("S2|E|S1|points back"))
	if got := before.ReferencedBy(id + ":1"); len(got) != 0 {
		t.Errorf("old snapshot changed: ReferencedBy = %v", got)
	}
	if got := e.view(t, id).Graph.ReferencedBy(id + ":1"); len(got) != 1 {
		t.Errorf("ReferencedBy = %v, want thought 2", got)
	}
}

func FuzzParseCipher(f *testing.F) {
	for _, s := range []string{
		"S1|O|User reports slow page loads",
		"S14|C|S12,S13|DB needs indexing",
		"S16|R|^[S12]|Actually [S3] network issue",
		"7|P||1. a | 2. b\nmore",
		"S1|H|",
		"[[[S1]",
		"S2|E|S1|^[S1",
		"S2=S5|H|S1|b",
		"S2=|H|b",
		"plain",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		info, ok := ledger.ParseCipher(s)
		again, ok2 := ledger.ParseCipher(s)
		if ok != ok2 || !cmp.Equal(info, again) {
			t.Fatalf("not deterministic on %q", s)
		}
		if !ok {
			return
		}
		if info.Type.Name() == "" || info.Step < 1 || info.Step > ledger.MaxThoughtNumber || strings.TrimSpace(info.Content) == "" {
			t.Fatalf("ParseCipher(%q) = %+v: invalid", s, info)
		}
		for _, r := range info.Refs {
			if r.Thought < 1 || r.Thought > ledger.MaxThoughtNumber || r.Node != "" {
				t.Fatalf("ParseCipher(%q): bad ref %+v", s, r)
			}
		}
		line := info.String()
		back, ok := ledger.ParseCipher(line)
		if !ok {
			t.Fatalf("String() of %q = %q does not parse", s, line)
		}
		if diff := cmp.Diff(info, back); diff != "" {
			t.Fatalf("round trip of %q through %q (-first +second):\n%s", s, line, diff)
		}
	})
}

// TestCipherAlias: S2=S5 is step 2, which its author called S5 (the form
// the cipher export writes); CipherExportInfo makes a thought's step its
// thought number and keeps the author's differing id as the alias.
func TestCipherAlias(t *testing.T) {
	info, ok := ledger.ParseCipher("S2=S5|H|S1|b")
	if !ok || info.Step != 2 || info.Alias != 5 || info.String() != "S2=S5|H|S1|b" {
		t.Fatalf("ParseCipher(S2=S5|H|S1|b) = %+v, %v", info, ok)
	}
	for _, bad := range []string{"S2=|H|b", "S2=x|H|b", "=S5|H|b"} {
		if _, ok := ledger.ParseCipher(bad); ok {
			t.Errorf("%q parsed as cipher", bad)
		}
	}
	written, _ := ledger.ParseCipher("S5|H|S1|b")
	for _, tc := range []struct {
		in   ledger.CipherInfo
		num  int
		want string
	}{
		{written, 2, "S2=S5|H|S1|b"},
		{written, 5, "S5|H|S1|b"},
		{info, 2, "S2=S5|H|S1|b"},
		{info, 5, "S5|H|S1|b"},
	} {
		if got := ledger.CipherExportInfo(tc.in, tc.num).String(); got != tc.want {
			t.Errorf("CipherExportInfo(%s, %d) = %s, want %s", tc.in, tc.num, got, tc.want)
		}
	}
}
