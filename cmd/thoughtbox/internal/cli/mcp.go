package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"github.com/thoughtbox/thoughtbox/config"
)

// mcpCmd is the command an MCP client launches: the server on stdio with
// no flags to remember (as `gopls mcp` and `github-mcp-server stdio`).
// serve keeps the HTTP default of seed 000 for servers people start.
type mcpCmd struct{}

func (c *mcpCmd) checkSettings(cfg *config.Config) error {
	return (&serveCmd{Transport: "stdio"}).checkSettings(cfg)
}

func (c *mcpCmd) Run(a *app) error {
	return (&serveCmd{Transport: "stdio"}).Run(a)
}

// stopWhenStdinCloses returns a context that is cancelled when ctx is, or
// when the process's standard input is a pipe or a socket and reaches its
// end. A client that starts an HTTP server as a child holds the other end
// of that pipe: when the client exits (or crashes) the pipe closes, and the
// server must not live on, holding its port. A server started from a
// shell (`serve &`: stdin is the terminal or /dev/null) or by systemd
// (/dev/null) never sees its stdin close, so it runs until signalled. What
// arrives on such a pipe is read and thrown away.
func stopWhenStdinCloses(ctx context.Context, stdin io.Reader, stderr io.Writer) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if !isPipe(stdin) {
		return ctx, cancel
	}
	go func() {
		io.Copy(io.Discard, stdin)
		if ctx.Err() == nil {
			fmt.Fprintln(stderr, "thoughtbox: standard input closed (the program that started this server has gone): stopping")
			cancel()
		}
	}()
	return ctx, cancel
}

// isPipe says whether r is a pipe or a socket: what a parent process hands
// its child for stdin (Node's child_process uses sockets, most others pipes).
func isPipe(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0
}

// listenTCP listens on host:port; when the port is taken it says so and,
// where the system tells, which process holds it.
func listenTCP(host string, port int) (net.Listener, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) && !isAddrInUse(err) {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	f := &failure{msg: fmt.Sprintf("listen on %s: port %d is already in use", addr, port)}
	if holder := portHolder(port); holder != "" {
		f.msg = fmt.Sprintf("listen on %s: port %d is already in use by %s", addr, port, holder)
	}
	f.hints = []string{
		"stop that process, or pick another port with --port (or PORT; 0 picks a free one)",
		"an MCP client that starts the server itself should run 'thoughtbox mcp' (stdio), which takes no port",
	}
	return nil, f
}

// isAddrInUse recognises Windows' own code for a taken port (WSAEADDRINUSE),
// which syscall.EADDRINUSE does not match there.
func isAddrInUse(err error) bool {
	var errno syscall.Errno
	return runtime.GOOS == "windows" && errors.As(err, &errno) && errno == 10048
}
