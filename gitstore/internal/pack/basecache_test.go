package pack

import (
	"bytes"
	"testing"
)

// TestBaseCacheEvictsLeastRecentlyUsed: the cache stays within its budget
// and, when full, drops the base used longest ago, so that a read of a
// base refreshes it.
func TestBaseCacheEvictsLeastRecentlyUsed(t *testing.T) {
	c := newBaseCache(400)
	pe := &Entry{name: "p"}
	data := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 100) }
	for i := range 4 {
		c.put(pe, int64(i), 3, data(i))
	}
	if c.used != 400 || len(c.m) != 4 {
		t.Fatalf("after 4 puts: used %d, %d items; want 400, 4", c.used, len(c.m))
	}
	if _, got, ok := c.get(pe, 0); !ok || !bytes.Equal(got, data(0)) {
		t.Fatalf("get 0: %v %x", ok, got)
	}
	c.put(pe, 4, 3, data(4)) // evicts 1: 0 was read after it
	if _, _, ok := c.get(pe, 1); ok {
		t.Fatal("base 1, the least recently used, is still cached")
	}
	for _, off := range []int64{0, 2, 3, 4} {
		if _, got, ok := c.get(pe, off); !ok || !bytes.Equal(got, data(int(off))) {
			t.Fatalf("base %d: cached %v, data %x", off, ok, got)
		}
	}
	if c.used != 400 || len(c.m) != 4 {
		t.Fatalf("used %d, %d items; want 400, 4", c.used, len(c.m))
	}
	c.put(pe, 5, 3, make([]byte, 101)) // larger than a quarter: not kept
	if _, _, ok := c.get(pe, 5); ok {
		t.Fatal("a base over a quarter of the budget was cached")
	}
	c.put(pe, 6, 3, make([]byte, 100)) // evicts 0, the oldest after the gets above
	if _, _, ok := c.get(pe, 0); ok {
		t.Fatal("base 0 is still cached after the reads that made it the oldest")
	}
	c.reset()
	if c.used != 0 || len(c.m) != 0 || c.lru.next != &c.lru {
		t.Fatal("reset left items")
	}
	c.put(pe, 7, 3, data(7))
	if _, _, ok := c.get(pe, 7); !ok {
		t.Fatal("put after reset not cached")
	}
}
