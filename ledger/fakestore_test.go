package ledger_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// fakeStore is the memory gitstore with what the ledger's tests watch and
// steer: it counts Append calls, remembers the last request, lets a test
// move a chain behind the ledger's back (beforeAppend, sneak) and report
// damage (integrity). Embedding the real store keeps every part of
// ledger.Store real, so the ledger's tests run on the store they will
// meet; the store refuses to overwrite a thought number on a chain, so any
// attempt by the ledger to do so fails the test that made it.
type fakeStore struct {
	*gitstore.Store

	mu       sync.Mutex
	calls    int // Append calls, successful or not
	appended int // thoughts committed through Append
	last     ledger.AppendRequest

	// beforeAppend, if set, runs at the start of every Append, outside the
	// lock: tests use it to move a chain behind the ledger's back.
	beforeAppend func(req ledger.AppendRequest)
	// integrity, if set, is reported by LoadSession and Verify.
	integrity *ledger.IntegrityValidationResult
}

func newFakeStore() *fakeStore {
	s, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		panic(err)
	}
	return &fakeStore{Store: s}
}

func (s *fakeStore) Append(ctx context.Context, req ledger.AppendRequest) (ledger.CommitID, error) {
	s.mu.Lock()
	hook := s.beforeAppend
	s.calls++
	s.last = req
	s.mu.Unlock()
	if hook != nil {
		hook(req)
	}
	c, err := s.Store.Append(ctx, req)
	if err == nil {
		s.mu.Lock()
		s.appended++
		s.mu.Unlock()
	}
	return c, err
}

// sneak commits a thought as another process would: against the chain's
// current head, bypassing the ledger under test.
func (s *fakeStore) sneak(id, branch string, d ledger.ThoughtData) ledger.CommitID {
	ctx := context.Background()
	ss, err := s.Store.LoadSession(ctx, id)
	if err != nil {
		panic(err)
	}
	req := ledger.AppendRequest{Meta: ss.Meta, Branch: branch, ExpectedTip: ss.MainTip, Thought: d,
		Author: ledger.Author{Name: "another process", Email: "other@fake.invalid"}}
	if branch != "" {
		req.NewBranch = true
		for _, b := range ss.Branches {
			if b.ID == branch {
				req.ExpectedTip, req.NewBranch = b.Tip, false
			}
		}
		if req.NewBranch {
			for _, t := range ss.Main {
				if t.Data.ThoughtNumber == *d.BranchFromThought {
					req.ExpectedTip = t.Commit
				}
			}
		}
	}
	c, err := s.Store.Append(ctx, req)
	if err != nil {
		panic(fmt.Sprintf("sneak %d onto %s %q: %v", d.ThoughtNumber, id, branch, err))
	}
	return c
}

func (s *fakeStore) LoadSession(ctx context.Context, id string) (*ledger.StoredSession, error) {
	ss, err := s.Store.LoadSession(ctx, id)
	if err == nil {
		ss.Integrity = s.integrityOr(ss.Integrity)
	}
	return ss, err
}

func (s *fakeStore) Verify(ctx context.Context, id string, opts ledger.VerifyOptions) (ledger.IntegrityValidationResult, error) {
	res, err := s.Store.Verify(ctx, id, opts)
	if err == nil {
		res = s.integrityOr(res)
	}
	return res, err
}

func (s *fakeStore) integrityOr(r ledger.IntegrityValidationResult) ledger.IntegrityValidationResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.integrity != nil {
		return *s.integrity
	}
	return r
}

// numbers lists the thought numbers stored on a chain, in commit order.
func (s *fakeStore) numbers(id, branch string) []int {
	ss, err := s.Store.LoadSession(context.Background(), id)
	if err != nil {
		panic(err)
	}
	var ts []ledger.StoredThought
	if branch == "" {
		ts = ss.Main
	}
	for _, b := range ss.Branches {
		if b.ID == branch {
			ts = b.Thoughts
		}
	}
	var out []int
	for _, t := range ts {
		out = append(out, t.Data.ThoughtNumber)
	}
	return out
}

func (s *fakeStore) stats() (calls, appended int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, s.appended
}
