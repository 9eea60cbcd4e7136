package ledger_test

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// fakeStore is an in-memory Store with the compare-and-swap semantics the
// ledger relies on. It refuses to overwrite a thought number on a chain, so
// any attempt by the ledger to do so fails the test that made it.
type fakeStore struct {
	mu       sync.Mutex
	seq      int
	sessions map[string]*fakeSession
	calls    int // Append calls, successful or not
	appended int // thoughts committed through Append
	last     ledger.AppendRequest

	// beforeAppend, if set, runs at the start of every Append, outside the
	// lock: tests use it to move a chain behind the ledger's back.
	beforeAppend func(req ledger.AppendRequest)
	// integrity, if set, is reported by LoadSession and Verify.
	integrity *ledger.IntegrityValidationResult
}

type fakeSession struct {
	meta     ledger.SessionMeta
	main     []ledger.StoredThought
	mainTip  ledger.CommitID
	branches []*fakeBranch
}

type fakeBranch struct {
	id       string
	fork     ledger.CommitID
	thoughts []ledger.StoredThought
	tip      ledger.CommitID
}

func newFakeStore() *fakeStore {
	return &fakeStore{sessions: map[string]*fakeSession{}}
}

func (s *fakeStore) commitID() ledger.CommitID {
	s.seq++
	return ledger.CommitID(fmt.Sprintf("c%d", s.seq))
}

func (s *fakeStore) CreateSession(_ context.Context, meta ledger.SessionMeta, _ ledger.Author) (ledger.SessionMeta, ledger.CommitID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[meta.ID]; ok {
		return ledger.SessionMeta{}, "", fmt.Errorf("session %s exists", meta.ID)
	}
	meta.PartitionPath = meta.CreatedAt.Format("2006-01")
	c := s.commitID()
	s.sessions[meta.ID] = &fakeSession{meta: meta, mainTip: c}
	return meta, c, nil
}

func (s *fakeStore) Append(_ context.Context, req ledger.AppendRequest) (ledger.CommitID, error) {
	s.mu.Lock()
	hook := s.beforeAppend
	s.mu.Unlock()
	if hook != nil {
		hook(req)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.last = req
	return s.appendLocked(req.Meta.ID, req.Branch, req.ExpectedTip, req.NewBranch, req.Thought, true)
}

// sneak commits a thought as another process would: against the chain's
// current head, bypassing the ledger under test.
func (s *fakeStore) sneak(id, branch string, d ledger.ThoughtData) ledger.CommitID {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	tip, newBranch := sess.mainTip, false
	if branch != "" {
		if b := sess.branch(branch); b != nil {
			tip = b.tip
		} else {
			newBranch = true
			for _, t := range sess.main {
				if t.Data.ThoughtNumber == *d.BranchFromThought {
					tip = t.Commit
				}
			}
		}
	}
	c, err := s.appendLocked(id, branch, tip, newBranch, d, false)
	if err != nil {
		panic(err)
	}
	return c
}

func (s *fakeStore) appendLocked(id, branch string, expected ledger.CommitID, newBranch bool, d ledger.ThoughtData, counted bool) (ledger.CommitID, error) {
	sess := s.sessions[id]
	if sess == nil {
		return "", ledger.ErrSessionNotFound
	}
	var chain *[]ledger.StoredThought
	var tip *ledger.CommitID
	switch b := sess.branch(branch); {
	case branch == "":
		chain, tip = &sess.main, &sess.mainTip
	case newBranch:
		if b != nil {
			return "", ledger.ErrConflict
		}
		if !slices.ContainsFunc(sess.main, func(t ledger.StoredThought) bool { return t.Commit == expected }) {
			return "", fmt.Errorf("fork commit %s is not on the main chain", expected)
		}
		b = &fakeBranch{id: branch, fork: expected, tip: expected}
		sess.branches = append(sess.branches, b)
		chain, tip = &b.thoughts, &b.tip
	case b == nil:
		return "", fmt.Errorf("no branch %q", branch)
	default:
		chain, tip = &b.thoughts, &b.tip
	}
	if *tip != expected {
		return "", ledger.ErrConflict
	}
	for _, t := range *chain {
		if t.Data.ThoughtNumber == d.ThoughtNumber {
			return "", fmt.Errorf("fake store: refusing to overwrite thought %d on %q", d.ThoughtNumber, branch)
		}
	}
	c := s.commitID()
	*chain = append(*chain, ledger.StoredThought{Data: d, Commit: c})
	*tip = c
	if d.Timestamp.After(sess.meta.UpdatedAt) {
		sess.meta.UpdatedAt = d.Timestamp
	}
	if counted {
		s.appended++
	}
	return c, nil
}

func (s *fakeStore) AddCritique(_ context.Context, req ledger.CritiqueRequest) (ledger.CommitID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[req.Meta.ID]
	if sess == nil {
		return "", ledger.ErrSessionNotFound
	}
	chain, tip := &sess.main, &sess.mainTip
	if req.Branch != "" {
		b := sess.branch(req.Branch)
		if b == nil {
			return "", ledger.ErrThoughtNotFound
		}
		chain, tip = &b.thoughts, &b.tip
	}
	if *tip != req.ExpectedTip {
		return "", ledger.ErrConflict
	}
	for i := range *chain {
		if (*chain)[i].Data.ThoughtNumber == req.ThoughtNumber {
			c := req.Critique
			(*chain)[i].Data.Critique = &c
			*tip = s.commitID()
			return *tip, nil
		}
	}
	return "", ledger.ErrThoughtNotFound
}

func (f *fakeSession) branch(id string) *fakeBranch {
	for _, b := range f.branches {
		if b.id == id {
			return b
		}
	}
	return nil
}

func (s *fakeStore) LoadSession(_ context.Context, id string) (*ledger.StoredSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	if sess == nil {
		return nil, ledger.ErrSessionNotFound
	}
	out := &ledger.StoredSession{
		Meta:      sess.meta,
		Main:      slices.Clone(sess.main),
		MainTip:   sess.mainTip,
		Integrity: s.integrityLocked(),
	}
	for _, b := range sess.branches {
		out.Branches = append(out.Branches, ledger.StoredBranch{
			ID: b.id, ForkCommit: b.fork, Thoughts: slices.Clone(b.thoughts), Tip: b.tip,
		})
	}
	return out, nil
}

func (s *fakeStore) integrityLocked() ledger.IntegrityValidationResult {
	if s.integrity != nil {
		return *s.integrity
	}
	return ledger.IntegrityValidationResult{Valid: true, SessionExists: true, ManifestExists: true, ManifestValid: true}
}

func (s *fakeStore) ListSessions(context.Context) ([]ledger.SessionSummary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ledger.SessionSummary
	for _, sess := range s.sessions {
		n := len(sess.main)
		for _, b := range sess.branches {
			n += len(b.thoughts)
		}
		out = append(out, ledger.SessionSummary{Meta: sess.meta, ThoughtCount: n, BranchCount: len(sess.branches)})
	}
	return out, nil
}

func (s *fakeStore) Verify(_ context.Context, id string) (ledger.IntegrityValidationResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[id] == nil {
		return ledger.IntegrityValidationResult{}, ledger.ErrSessionNotFound
	}
	return s.integrityLocked(), nil
}

// numbers lists the thought numbers stored on a chain, in commit order.
func (s *fakeStore) numbers(id, branch string) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[id]
	ts := sess.main
	if branch != "" {
		ts = sess.branch(branch).thoughts
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
