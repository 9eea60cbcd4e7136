//go:build unix

package stdio

import (
	"context"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// TestStdioPipeLeftToCaller: over a blocking pipe, as stdin is when a
// client starts the server, the transport waits for input in poll(2)
// without changing the pipe's mode, and once the connection is closed its
// reader has stopped: what arrives afterwards is the caller's to read,
// from a pipe still in blocking mode.
func TestStdioPipeLeftToCaller(t *testing.T) {
	// NewFile on a blocking descriptor reads it with blocking calls, as
	// os.Stdin does.
	p, rf, wf, conn := pipeConn(t, false)
	if flags, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETFL, 0); err != nil || flags&unix.O_NONBLOCK != 0 {
		t.Fatalf("the pipe was made non-blocking (flags %#x, %v)", flags, err)
	}
	if _, err := wf.WriteString(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	m, err := conn.Read(t.Context())
	if r, ok := m.(*jsonrpc.Request); err != nil || !ok || r.Method != "ping" {
		t.Fatalf("read %#v, %v", m, err)
	}
	conn.Close()
	flags, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_NONBLOCK != 0 {
		t.Fatalf("the pipe was left non-blocking (flags %#x, %v)", flags, err)
	}
	if _, err := wf.WriteString("after\n"); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 16)
		n, err := rf.Read(buf)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- string(buf[:n])
	}()
	select {
	case s := <-got:
		if s != "after\n" {
			t.Fatalf("the caller read %q after Close, want %q", s, "after\n")
		}
	case <-time.After(10 * time.Second):
		// Only reached when the transport's reader is still waiting on
		// the pipe and took the line.
		t.Fatal("the connection's reader still takes input after Close")
	}
}

// TestStdioNonBlockingPipe: a pipe its owner made non-blocking is read as
// well, message by message as they arrive, and the connection's close
// ends a reader waiting on it.
func TestStdioNonBlockingPipe(t *testing.T) {
	_, _, wf, conn := pipeConn(t, true)
	for i := 1; i <= 3; i++ {
		// The reader is waiting for input when each line arrives.
		time.Sleep(time.Millisecond)
		if _, err := fmt.Fprintf(wf, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i); err != nil {
			t.Fatal(err)
		}
		m, err := conn.Read(t.Context())
		r, ok := m.(*jsonrpc.Request)
		if err != nil || !ok || r.Method != "ping" || r.ID.Raw() != int64(i) {
			t.Fatalf("message %d: read %#v, %v", i, m, err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		done <- err
	}()
	conn.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Read after Close returned a message")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read still waits after Close")
	}
}

// pipeConn connects a Transport reading a new pipe (its read end made
// non-blocking if asked), and returns the pipe's descriptors, both ends
// as files (closed when the test ends) and the connection.
func pipeConn(t *testing.T, nonblock bool) ([2]int, *os.File, *os.File, mcp.Connection) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	if nonblock {
		if err := unix.SetNonblock(p[0], true); err != nil {
			t.Fatal(err)
		}
	}
	rf, wf := os.NewFile(uintptr(p[0]), "in"), os.NewFile(uintptr(p[1]), "out")
	t.Cleanup(func() { rf.Close(); wf.Close() })
	conn, err := Transport{In: rf, Out: io.Discard}.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return p, rf, wf, conn
}
