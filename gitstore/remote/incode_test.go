package remote_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/gitstore/remote/remotetest"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// inCode opens a ledger with the code repository's layout on a new
// repository, as remotetest.New does for a standalone one.
func inCode(t *testing.T, name string) (*remotetest.Clone, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name+".git")
	s, err := gitstore.Open(dir, gitstore.Options{Layout: gitstore.InCode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &remotetest.Clone{T: t, Name: name, Store: s, Ledger: ledger.New(s, ledger.Options{})}, dir
}

// TestPushPullInCode: a ledger kept in a code repository pushes only its
// refs under refs/thoughtbox/v1/ — not the code's branch beside them, not
// an excluded session, which the result names — and a pull takes them
// into the same names.
func TestPushPullInCode(t *testing.T) {
	o := remote.TransferOptions{BuiltinFile: true}
	bare := remotetest.BareRemote(t)
	a, aDir := inCode(t, "alice")
	b, _ := inCode(t, "bob")
	shared, private := a.Start("Shared"), a.Start("Private")
	a.Think(shared, "one")
	a.Think(private, "secret")
	if err := a.Store.Flush(); err != nil {
		t.Fatal(err)
	}

	// A code branch of the same repository, pointing at a reasoning
	// commit: only the layout's refs may leave.
	repo, err := gogit.PlainOpen(aDir)
	if err != nil {
		t.Fatal(err)
	}
	tip, err := repo.Reference(plumbing.ReferenceName("refs/thoughtbox/v1/sessions/"+shared+"/main"), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewHashReference("refs/heads/main", tip.Hash())); err != nil {
		t.Fatal(err)
	}

	o.Exclude = []string{private}
	res := a.Push(bare, o)
	if !slices.Equal(res.Withheld, []string{private}) || len(res.Updated) != 1 || res.Updated[0].Session != shared {
		t.Fatalf("push: withheld %v, updated %+v", res.Withheld, res.Updated)
	}
	rrepo, err := gogit.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := rrepo.References()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	refs.ForEach(func(r *plumbing.Reference) error {
		if r.Name() != plumbing.HEAD {
			names = append(names, r.Name().String())
		}
		return nil
	})
	if want := []string{"refs/thoughtbox/v1/sessions/" + shared + "/main"}; !slices.Equal(names, want) {
		t.Fatalf("remote refs %v, want %v", names, want)
	}

	o.Exclude = nil
	got := b.Pull(bare, o)
	if len(got.Created) != 1 || !strings.HasPrefix(got.Created[0].Ref, "refs/thoughtbox/v1/sessions/") {
		t.Fatalf("pull: %+v", got.Created)
	}
	if th, want := b.Thoughts(shared), a.Thoughts(shared); len(th) != 1 || !slices.Equal(th, want) {
		t.Fatalf("bob reads %q, alice %q", th, want)
	}
}

// remoteRefNames lists a bare repository's refs (HEAD left out), sorted.
func remoteRefNames(t *testing.T, bare string) []string {
	t.Helper()
	rrepo, err := gogit.PlainOpen(bare)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := rrepo.References()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	refs.ForEach(func(r *plumbing.Reference) error {
		if r.Name() != plumbing.HEAD {
			names = append(names, r.Name().String())
		}
		return nil
	})
	slices.Sort(names)
	return names
}

// TestTransferSomeSessions: a push with SessionsOnly sends every ref
// under the listed sessions' folders and nothing else (no other session,
// no knowledge zone); a pull given Sessions takes only theirs; a pull
// with Since takes only sessions whose main tip is that recent (and the
// knowledge zone, which Since leaves alone).
func TestTransferSomeSessions(t *testing.T) {
	o := remote.TransferOptions{BuiltinFile: true}
	bare := remotetest.BareRemote(t)
	a, _ := inCode(t, "alice")
	one, two, three := a.Start("One"), a.Start("Two"), a.Start("Three")
	for _, id := range []string{one, two, three} {
		a.Think(id, "first of "+id)
	}
	a.Branch(one, "idea", 1, "tried")
	if _, err := a.Ledger.Knowledge().CreatePattern(t.Context(), ledger.CreatePatternParams{Title: "A pattern", Description: "d", Content: "body"}, ledger.Author{Name: "alice"}); err != nil {
		t.Fatal(err)
	}
	po := o
	po.Sessions, po.SessionsOnly = []string{one}, true
	a.Push(bare, po)
	want := []string{"refs/thoughtbox/v1/sessions/" + one + "/branches/idea", "refs/thoughtbox/v1/sessions/" + one + "/main"}
	if got := remoteRefNames(t, bare); !slices.Equal(got, want) {
		t.Fatalf("remote refs %v, want %v", got, want)
	}
	a.Push(bare, o) // everything

	b, _ := inCode(t, "bob")
	lo := o
	lo.Sessions = []string{two}
	got := b.Pull(bare, lo)
	if len(got.Created) != 1 || got.Created[0].Session != two || !slices.Equal(b.Sessions(), []string{two}) {
		t.Fatalf("pull of one session: created %+v, sessions %v", got.Created, b.Sessions())
	}

	so := o
	so.Since = time.Now().Add(time.Hour)
	b.Pull(bare, so) // the knowledge zone comes; no session does
	if got := b.Sessions(); !slices.Equal(got, []string{two}) {
		t.Fatalf("pull since an hour ahead: sessions %v, want only %s", got, two)
	}
	tip, err := a.Store.ReadRef("refs/thoughtbox/v1/sessions/" + three + "/main")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Store.ReadObject(tip); err == nil {
		t.Fatal("a session left out by Since still had its objects taken in")
	}
	so.Since = time.Now().Add(-time.Hour)
	b.Pull(bare, so)
	if got := b.Sessions(); len(got) != 3 {
		t.Fatalf("pull since an hour ago: sessions %v, want all three", got)
	}
}

// TestKnowledgeMergesInCode: the knowledge zone of a ledger kept in a code
// repository is the knowledge kind's ref under refs/thoughtbox/v1/, so a
// pull merges two clones' different entries into it, as in a standalone
// ledger, instead of keeping the remote's tip aside as diverged.
func TestKnowledgeMergesInCode(t *testing.T) {
	o := remote.TransferOptions{BuiltinFile: true}
	bare := remotetest.BareRemote(t)
	a, _ := inCode(t, "alice")
	b, _ := inCode(t, "bob")
	pattern := func(c *remotetest.Clone, title string) {
		t.Helper()
		if _, err := c.Ledger.Knowledge().CreatePattern(t.Context(), ledger.CreatePatternParams{Title: title, Description: "d", Content: "body"}, ledger.Author{Name: c.Name}); err != nil {
			t.Fatal(err)
		}
	}
	pattern(a, "First")
	a.Push(bare, o)
	b.Pull(bare, o)
	pattern(a, "Second")
	a.Push(bare, o)
	pattern(b, "Third")

	res := b.Pull(bare, o)
	const ref = "refs/thoughtbox/v1/knowledge"
	if len(res.Diverged) != 0 || len(res.Updated) != 1 || res.Updated[0].Ref != ref || !res.Updated[0].Merged {
		t.Fatalf("pull: updated %+v, diverged %+v; want %s merged", res.Updated, res.Diverged, ref)
	}
	entries, err := b.Store.ListKnowledge(t.Context(), ledger.KindPattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("bob has %d patterns after the merge, want 3: %+v", len(entries), entries)
	}
}
