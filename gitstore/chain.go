package gitstore

// The store's side of a chain's state (gitstore/internal/chain): one state
// a chain ref, the commit added on what a state builds, and the store's
// typed object readers.

import (
	"context"
	"fmt"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/chain"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// chainFolders names, for package chain, the folders of a session's path
// that the layout spells.
var chainFolders = chain.Folders{Area: "sessions", Branches: "branches"}

func (s *Store) chain(ref string) *chain.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.chains[ref]
	if !ok {
		c = &chain.State{}
		s.chains[ref] = c
	}
	return c
}

// buildCommit builds on st (chain.State.Build) and adds the commit of its
// root tree on parent.
func buildCommit(st *chain.State, file []byte, fileName string, author ledger.Author, when time.Time, message string, parent hash) (*batch, hash) {
	b, tree := st.Build(file, fileName)
	return b, addCommit(b, commitSpec{tree: tree, parents: []hash{parent}, message: message, author: &author, when: when})
}

// readChain rebuilds the in-memory state of a chain from the commit it will
// grow from. For a new branch that is the main-chain commit it forks from.
func (s *Store) readChain(tip hash, sessionID, branch string) (*chain.State, error) {
	return chain.Read(context.Background(), s.be, chainFolders, tip, sessionID, branch)
}

// chainAt reports whether this store's state of the chain ref is valid
// and at tip.
func (s *Store) chainAt(ref string, tip hash) bool {
	s.mu.Lock()
	c := s.chains[ref]
	s.mu.Unlock()
	if c == nil {
		return false
	}
	c.Lock()
	defer c.Unlock()
	return c.At(tip)
}

func (s *Store) readTyped(id hash, want objType) ([]byte, error) {
	t, data, err := s.be.ReadObject(context.Background(), id)
	if err != nil {
		return nil, err
	}
	if t != want {
		return nil, fmt.Errorf("object %s is a %s, expected a %s", id, t, want)
	}
	return data, nil
}

func (s *Store) readCommit(id hash) (*object.ParsedCommit, error) {
	data, err := s.readTyped(id, typeCommit)
	if err != nil {
		return nil, err
	}
	return object.ParseCommit(data)
}

func (s *Store) readTreeBytes(id hash) (*object.Tree, []byte, error) {
	data, err := s.readTyped(id, typeTree)
	if err != nil {
		return nil, nil, err
	}
	t, err := object.ParseTree(data)
	return t, data, err
}

func (s *Store) readBlob(id hash) ([]byte, error) { return s.readTyped(id, typeBlob) }
