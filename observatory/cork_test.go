package observatory

import (
	"bytes"
	"net"
	"testing"
)

// countingConn records each Write it is given.
type countingConn struct {
	net.Conn
	writes [][]byte
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

// TestCorkBatchesWrites: between cork and uncork, writes reach the
// connection as one; past corkSize they are flushed in order; uncorked,
// each write goes straight through.
func TestCorkBatchesWrites(t *testing.T) {
	under := &countingConn{}
	c := &corkConn{Conn: under}
	c.Write([]byte("plain"))
	c.cork()
	var want bytes.Buffer
	for i := 0; i < 10; i++ {
		msg := bytes.Repeat([]byte{byte('a' + i)}, 100)
		c.Write(msg)
		want.Write(msg)
	}
	if len(under.writes) != 1 {
		t.Fatalf("%d writes before uncork, want only the uncorked one", len(under.writes))
	}
	if err := c.uncork(); err != nil {
		t.Fatal(err)
	}
	if len(under.writes) != 2 || !bytes.Equal(under.writes[1], want.Bytes()) {
		t.Fatalf("after uncork: %d writes, want 2 (the batch as one)", len(under.writes))
	}

	under.writes = nil
	c.cork()
	big := bytes.Repeat([]byte("x"), corkSize-2)
	c.Write([]byte("head"))
	c.Write(big)            // does not fit behind "head": "head" goes first
	c.Write([]byte("tail")) // nor behind big
	huge := bytes.Repeat([]byte("y"), corkSize+1)
	c.Write(huge) // flushes what is held, then goes through as is
	c.uncork()
	got := bytes.Join(under.writes, nil)
	if !bytes.Equal(got, bytes.Join([][]byte{[]byte("head"), big, []byte("tail"), huge}, nil)) {
		t.Fatalf("bytes out of order or lost across flushes (%d writes)", len(under.writes))
	}
	if len(under.writes) != 4 {
		t.Errorf("%d writes, want 4 (head, big, tail, huge): sizes %v", len(under.writes), sizes(under.writes))
	}

	var none *corkConn // a connection not from corkListener
	none.cork()
	if err := none.uncork(); err != nil {
		t.Fatal(err)
	}
}

func sizes(ws [][]byte) []int {
	var n []int
	for _, w := range ws {
		n = append(n, len(w))
	}
	return n
}
