package gitstore

import (
	"encoding/gob"
	"os"
	"path/filepath"
	"sync"

	"github.com/thoughtbox/thoughtbox/internal/durable"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// summaryCache remembers each session's listing summary together with the
// tips of its refs when it was read. It is derived data: an entry is used
// only while the refs still have exactly those tips, so it can be stale but
// never wrong, and deleting it loses nothing. On disk it lives in
// thoughtbox/summaries (so a new process lists quickly too); with in-memory
// storage it lives only in memory.
type summaryCache struct {
	path string // "" for memory only
	mu   sync.Mutex
	m    map[string]cachedSummary
}

type cachedSummary struct {
	Key     string
	Summary ledger.SessionSummary
}

func (c *summaryCache) load() map[string]cachedSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil && c.path != "" {
		if f, err := os.Open(c.path); err == nil {
			var m map[string]cachedSummary
			if gob.NewDecoder(f).Decode(&m) == nil {
				c.m = m
			}
			f.Close()
		}
	}
	out := make(map[string]cachedSummary, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

func (c *summaryCache) store(m map[string]cachedSummary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m = m
	if c.path == "" {
		return
	}
	// Best effort, and not synced: losing the cache only costs a re-read.
	tmp, err := os.CreateTemp(filepath.Dir(c.path), "summaries-*")
	if err != nil {
		return
	}
	if gob.NewEncoder(tmp).Encode(m) != nil || tmp.Close() != nil {
		os.Remove(tmp.Name())
		return
	}
	if durable.Rename(tmp.Name(), c.path) != nil {
		os.Remove(tmp.Name())
	}
}
