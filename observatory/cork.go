package observatory

import (
	"net"
	"sync"
)

// corkListener hands out connections that can hold their writes back, so
// that a connection's writer sends a batch of WebSocket messages in one
// system call instead of one per message (gorilla/websocket writes each
// frame straight to the connection).
type corkListener struct{ net.Listener }

func (l corkListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &corkConn{Conn: c}, nil
}

// corkFlushAt is how much a corked connection holds before it writes anyway.
const corkFlushAt = 256 << 10

// corkConn buffers writes between cork and uncork. A nil *corkConn (a
// connection that did not come from corkListener) does nothing.
type corkConn struct {
	net.Conn
	mu     sync.Mutex
	corked bool
	buf    []byte
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked && len(c.buf)+len(p) <= corkFlushAt {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	if c.corked && len(p) < corkFlushAt {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *corkConn) flushLocked() error {
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}

func (c *corkConn) cork() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork writes what cork held back.
func (c *corkConn) uncork() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	err := c.flushLocked()
	if cap(c.buf) > corkFlushAt {
		c.buf = nil
	}
	return err
}

// CloseWrite lets net/http half-close a connection it is done with, as it
// does with a bare TCP connection.
func (c *corkConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
