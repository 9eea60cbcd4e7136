package notebook

import (
	"context"
	"crypto/sha1"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// memStore is an in-memory ledger.NotebookStore with the contract's
// compare-and-swap, keeping every commit so tests can count them.
type memStore struct {
	mu      sync.Mutex
	tips    map[string]ledger.CommitID
	files   map[ledger.CommitID]map[string][]byte
	commits map[string][]ledger.NotebookWrite // per notebook, oldest first
	when    map[string]time.Time
}

func newMemStore() *memStore {
	return &memStore{tips: map[string]ledger.CommitID{}, files: map[ledger.CommitID]map[string][]byte{}, commits: map[string][]ledger.NotebookWrite{}, when: map[string]time.Time{}}
}

func (m *memStore) ListNotebooks(ctx context.Context) ([]ledger.NotebookHead, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ledger.NotebookHead
	for id, tip := range m.tips {
		out = append(out, ledger.NotebookHead{ID: id, Tip: tip, UpdatedAt: m.when[id]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (m *memStore) ReadNotebook(ctx context.Context, id string) (map[string][]byte, ledger.CommitID, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tip, ok := m.tips[id]
	if !ok {
		return nil, "", ledger.ErrNotebookNotFound
	}
	return maps.Clone(m.files[tip]), tip, nil
}

func (m *memStore) WriteNotebook(ctx context.Context, w ledger.NotebookWrite) (ledger.CommitID, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tips[w.ID] != w.ExpectedTip {
		return "", ledger.ErrConflict
	}
	n := len(m.commits[w.ID])
	tip := ledger.CommitID(fmt.Sprintf("%x", sha1.Sum([]byte(fmt.Sprintf("%s/%d", w.ID, n)))))
	files := map[string][]byte{}
	for k, v := range w.Files {
		files[k] = append([]byte(nil), v...)
	}
	m.files[tip] = files
	m.tips[w.ID] = tip
	m.when[w.ID] = w.When
	m.commits[w.ID] = append(m.commits[w.ID], w)
	return tip, nil
}

// DeleteNotebook drops the ref; the commits stay in m.commits, as a
// record keeps them on the git store.
func (m *memStore) DeleteNotebook(ctx context.Context, id string, expected ledger.CommitID, author ledger.Author, at time.Time) (ledger.DeletedNotebook, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tip, ok := m.tips[id]
	switch {
	case !ok:
		return ledger.DeletedNotebook{}, ledger.ErrNotebookNotFound
	case expected != "" && expected != tip:
		return ledger.DeletedNotebook{}, ledger.ErrConflict
	}
	delete(m.tips, id)
	delete(m.when, id)
	return ledger.DeletedNotebook{ID: id, Ref: "notebooks/" + id, Tip: tip}, nil
}

func (m *memStore) messages(id string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, c := range m.commits[id] {
		out = append(out, c.Message)
	}
	return out
}
