//go:build unix

package main

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServeStopsOnSignal: an idle `thoughtbox serve` ends with status 0 on
// SIGINT and on SIGTERM, over both transports. (How fast is measured, not
// asserted: BENCHMARKS.md, "Sandbox, notebooks, stopping".)
func TestServeStopsOnSignal(t *testing.T) {
	t.Parallel()
	bin := thoughtboxBinary(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run("http/"+sig.String(), func(t *testing.T) {
			srv := startMSServer(t, bin, t.TempDir(), "sig")
			began := time.Now()
			srv.cmd.Process.Signal(sig)
			select {
			case <-srv.done:
			case <-time.After(30 * time.Second):
				t.Fatalf("still running 30 s after %v", sig)
			}
			t.Logf("stopped %v after %v", srv.err, time.Since(began))
			if srv.err != nil {
				t.Fatalf("exit after %v: %v\n%s", sig, srv.err, srv.output())
			}
		})
		t.Run("stdio/"+sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "serve", "--transport", "stdio")
			cmd.Env = append(os.Environ(), "THOUGHTBOX_DATA_DIR="+t.TempDir())
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			// Answered initialize: the server is up and idle.
			stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"))
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil || !strings.Contains(line, `"id":1`) {
				t.Fatalf("initialize: %q, %v", line, err)
			}
			began := time.Now()
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				t.Logf("stopped after %v", time.Since(began))
				if err != nil {
					t.Fatalf("exit after %v: %v", sig, err)
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("still running 30 s after %v", sig)
			}
		})
	}
}
