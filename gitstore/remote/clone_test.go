package remote_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	gogit "github.com/go-git/go-git/v5"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// clone is one agent's ledger: its own repository and a ledger on it.
type clone struct {
	t     *testing.T
	name  string
	store *gitstore.Store
	l     *ledger.Ledger
}

func newClone(t *testing.T, name string) *clone {
	t.Helper()
	s, err := gitstore.Open(filepath.Join(t.TempDir(), name+".git"), gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &clone{t: t, name: name, store: s, l: ledger.New(s, ledger.Options{})}
}

func (c *clone) start(title string) string {
	c.t.Helper()
	ss, err := c.l.StartSession(context.Background(), ledger.CreateSessionParams{Title: title}, ledger.Author{Name: c.name})
	if err != nil {
		c.t.Fatal(err)
	}
	return ss.ID
}

func (c *clone) think(id, text string) {
	c.t.Helper()
	if _, err := c.l.AddThought(context.Background(), id, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, ledger.Author{Name: c.name}); err != nil {
		c.t.Fatalf("%s: thought %q: %v", c.name, text, err)
	}
}

func (c *clone) branch(id, branch string, from int, text string) {
	c.t.Helper()
	if _, err := c.l.AddThought(context.Background(), id, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true, BranchID: branch, BranchFromThought: &from}, ledger.Author{Name: c.name}); err != nil {
		c.t.Fatalf("%s: branch thought %q: %v", c.name, text, err)
	}
}

// thoughts lists a session's thoughts as "branch/n: text", as this clone's
// store has them now (read fresh, not from the ledger's cache).
func (c *clone) thoughts(id string) []string {
	c.t.Helper()
	v, err := ledger.New(c.store, ledger.Options{}).Load(context.Background(), id)
	if err != nil {
		c.t.Fatalf("%s: load %s: %v", c.name, id, err)
	}
	if !v.Integrity.Valid {
		c.t.Fatalf("%s: session %s fails its integrity check: %+v", c.name, id, v.Integrity)
	}
	var out []string
	for _, n := range v.Graph.Nodes() {
		out = append(out, fmt.Sprintf("%s/%d: %s", n.Data.BranchID, n.Data.ThoughtNumber, n.Data.Thought))
	}
	sort.Strings(out)
	return out
}

func (c *clone) sessions() []string {
	c.t.Helper()
	list, err := c.store.ListSessions(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.Meta.ID)
	}
	sort.Strings(ids)
	return ids
}

func (c *clone) push(url string, o remote.TransferOptions) *remote.PushResult {
	c.t.Helper()
	r, err := remote.Push(context.Background(), c.store, url, o)
	if err != nil {
		c.t.Fatalf("%s: push: %v", c.name, err)
	}
	return r
}

func (c *clone) pull(url string, o remote.TransferOptions) *remote.PullResult {
	c.t.Helper()
	r, err := remote.Pull(context.Background(), c.store, url, o)
	if err != nil {
		c.t.Fatalf("%s: pull: %v", c.name, err)
	}
	return r
}

func bareRemote(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "remote.git")
	if _, err := gogit.PlainInit(dir, true); err != nil {
		t.Fatal(err)
	}
	return dir
}
