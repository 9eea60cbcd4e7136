package remote

import (
	"context"
	"path/filepath"
	"testing"

	gogit "github.com/go-git/go-git/v5"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func TestValidSharedRef(t *testing.T) {
	for name, want := range map[string]bool{
		"refs/heads/knowledge":                           true,
		"refs/heads/sessions/abc-123/main":               true,
		"refs/heads/sessions/abc-123/branches/redis-way": true,
		"refs/heads/sessions/abc-123":                    false,
		"refs/heads/sessions/../../config/main":          false,
		"refs/heads/sessions/ABC/main":                   false,
		"refs/heads/sessions/abc/branches/x/y":           false,
		"refs/heads/sessions/abc/branches/..":            false,
		"refs/heads/sessions/abc/other":                  false,
		"refs/heads/main":                                false,
		"refs/tags/v1":                                   false,
	} {
		if got := gitstore.ValidSharedRef(name); got != want {
			t.Errorf("gitstore.ValidSharedRef(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestPullRacesALocalWriter moves a local ref between a pull's planning and
// its batch: the batch's compare-and-swap fails, each session is redone on
// its own, and the local thought is kept.
func TestPullRacesALocalWriter(t *testing.T) {
	ctx := context.Background()
	remote := filepath.Join(t.TempDir(), "remote.git")
	if _, err := gogit.PlainInit(remote, true); err != nil {
		t.Fatal(err)
	}
	open := func(name string) (*gitstore.Store, *ledger.Ledger) {
		s, err := gitstore.Open(filepath.Join(t.TempDir(), name), gitstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, ledger.New(s, ledger.Options{})
	}
	think := func(l *ledger.Ledger, id, text string) {
		t.Helper()
		if _, err := l.AddThought(ctx, id, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, ledger.Author{Name: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	as, al := open("a.git")
	bs, bl := open("b.git")
	o := TransferOptions{BuiltinFile: true}
	s1, err := al.StartSession(ctx, ledger.CreateSessionParams{Title: "one"}, ledger.Author{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	think(al, s1.ID, "a1")
	if _, err := Push(ctx, as, remote, o); err != nil {
		t.Fatal(err)
	}
	if _, err := Pull(ctx, bs, remote, o); err != nil {
		t.Fatal(err)
	}
	// a goes on with s1 and starts s2; b, while pulling that, writes s1.
	think(al, s1.ID, "a2")
	s2, err := al.StartSession(ctx, ledger.CreateSessionParams{Title: "two"}, ledger.Author{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	think(al, s2.ID, "a-two")
	if _, err := Push(ctx, as, remote, o); err != nil {
		t.Fatal(err)
	}
	pullPlanned = func() { think(bl, s1.ID, "b2, written during the pull") }
	defer func() { pullPlanned = nil }()
	res, err := Pull(ctx, bs, remote, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diverged) != 1 || res.Diverged[0].Session != s1.ID || len(res.Created) != 1 || res.Created[0].Session != s2.ID {
		t.Fatalf("pull racing a writer: %+v", res)
	}
	v, err := ledger.New(bs, ledger.Options{}).Load(ctx, s1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := v.Graph.Last(); last.Data.Thought != "b2, written during the pull" {
		t.Fatalf("b's thought was lost: last is %q", last.Data.Thought)
	}
}
