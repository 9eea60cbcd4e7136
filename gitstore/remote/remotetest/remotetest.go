// Package remotetest gives tests of sharing a ledger what they all need:
// ledgers of their own, each on its own repository, that start sessions,
// think, branch, push and pull, and a bare remote between them.
package remotetest

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
	"github.com/thoughtbox/thoughtbox/sharing"
)

// Clone is one agent's ledger: its own repository and a ledger on it.
// Its methods fail the test on any error.
type Clone struct {
	T      *testing.T
	Name   string
	Store  *gitstore.Store
	Ledger *ledger.Ledger
}

// New opens a ledger on a new repository in the test's temporary
// directory, closed when the test ends.
func New(t *testing.T, name string) *Clone {
	t.Helper()
	s, err := gitstore.Open(filepath.Join(t.TempDir(), name+".git"), gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &Clone{T: t, Name: name, Store: s, Ledger: ledger.New(s, ledger.Options{})}
}

// Start starts a session and returns its id.
func (c *Clone) Start(title string) string {
	c.T.Helper()
	ss, err := c.Ledger.StartSession(context.Background(), ledger.CreateSessionParams{Title: title}, ledger.Author{Name: c.Name})
	if err != nil {
		c.T.Fatal(err)
	}
	return ss.ID
}

// Think adds a thought to the session's main line.
func (c *Clone) Think(id, text string) {
	c.T.Helper()
	if _, err := c.Ledger.AddThought(context.Background(), id, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, ledger.Author{Name: c.Name}); err != nil {
		c.T.Fatalf("%s: thought %q: %v", c.Name, text, err)
	}
}

// Branch adds a thought to a branch, forked from thought from.
func (c *Clone) Branch(id, branch string, from int, text string) {
	c.T.Helper()
	if _, err := c.Ledger.AddThought(context.Background(), id, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true, BranchID: branch, BranchFromThought: &from}, ledger.Author{Name: c.Name}); err != nil {
		c.T.Fatalf("%s: branch thought %q: %v", c.Name, text, err)
	}
}

// Thoughts lists a session's thoughts as "branch/n: text", sorted, as
// this clone's store has them now (read fresh, not from the ledger's
// cache); a session that fails its integrity check fails the test.
func (c *Clone) Thoughts(id string) []string {
	c.T.Helper()
	v, err := ledger.New(c.Store, ledger.Options{}).Load(context.Background(), id)
	if err != nil {
		c.T.Fatalf("%s: load %s: %v", c.Name, id, err)
	}
	if !v.Integrity.Valid {
		c.T.Fatalf("%s: session %s fails its integrity check: %+v", c.Name, id, v.Integrity)
	}
	var out []string
	for _, n := range v.Graph.Nodes() {
		out = append(out, fmt.Sprintf("%s/%d: %s", n.Data.BranchID, n.Data.ThoughtNumber, n.Data.Thought))
	}
	sort.Strings(out)
	return out
}

// Sessions lists the ids of the store's sessions, sorted.
func (c *Clone) Sessions() []string {
	c.T.Helper()
	list, err := c.Store.ListSessions(context.Background())
	if err != nil {
		c.T.Fatal(err)
	}
	var ids []string
	for _, s := range list {
		ids = append(ids, s.Meta.ID)
	}
	sort.Strings(ids)
	return ids
}

// Push pushes to url.
func (c *Clone) Push(url string, o remote.TransferOptions) *sharing.PushResult {
	c.T.Helper()
	r, err := remote.Push(context.Background(), c.Store, url, o)
	if err != nil {
		c.T.Fatalf("%s: push: %v", c.Name, err)
	}
	return r
}

// Pull pulls from url.
func (c *Clone) Pull(url string, o remote.TransferOptions) *sharing.PullResult {
	c.T.Helper()
	r, err := remote.Pull(context.Background(), c.Store, url, o)
	if err != nil {
		c.T.Fatalf("%s: pull: %v", c.Name, err)
	}
	return r
}

// BareRemote makes an empty bare repository in the test's temporary
// directory and returns its path.
func BareRemote(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "remote.git")
	if _, err := gogit.PlainInit(dir, true); err != nil {
		t.Fatal(err)
	}
	return dir
}
