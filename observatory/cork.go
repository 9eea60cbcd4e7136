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

// corkSize is how much a corked connection holds before it writes anyway.
// The buffer is allocated once per connection and kept: growing it anew
// for every batch cost a quarter of the server's time in the fan-out
// benchmark.
const corkSize = 64 << 10

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
	if !c.corked {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		return c.Conn.Write(p)
	}
	if len(c.buf)+len(p) > cap(c.buf) {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) >= corkSize {
			return c.Conn.Write(p)
		}
		if c.buf == nil {
			c.buf = make([]byte, 0, corkSize)
		}
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
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
	return c.flushLocked()
}

// CloseWrite lets net/http half-close a connection it is done with, as it
// does with a bare TCP connection.
func (c *corkConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
