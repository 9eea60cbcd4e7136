package main

import (
	"bufio"
	"context"
	"errors"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// startAnnounced starts cmd (whose stderr nobody has taken yet) and waits
// until its stderr has matched every pattern, as a server announces where
// it listens; it returns each pattern's first submatch, or the whole match
// for a pattern without groups. Stderr is read to its end, so the process
// never blocks on a full pipe. The test fails if the announcements do not
// come within wait; the process is interrupted and reaped when the test
// ends, whatever the caller does to stop it earlier.
func startAnnounced(t *testing.T, cmd *exec.Cmd, wait time.Duration, patterns ...*regexp.Regexp) []string {
	t.Helper()
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	type match struct {
		i int
		s string
	}
	found := make(chan match, len(patterns))
	go func() {
		seen := make([]bool, len(patterns))
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			for i, re := range patterns {
				m := re.FindStringSubmatch(sc.Text())
				if m == nil || seen[i] {
					continue
				}
				seen[i] = true
				if len(m) > 1 {
					m = m[1:]
				}
				found <- match{i, m[0]}
			}
		}
		io.Copy(io.Discard, errPipe)
	}()
	got := make([]string, len(patterns))
	deadline := time.After(wait)
	for range patterns {
		select {
		case m := <-found:
			got[m.i] = m.s
		case <-deadline:
			t.Fatalf("%s never printed all of %v", cmd.Path, patterns)
		}
	}
	return got
}

// serveStdio runs `thoughtbox serve --transport stdio` with env added to
// this process's environment and connects client to it. The server's
// stderr is kept for failure messages; the session is closed when the
// test ends, if the test has not closed it.
func serveStdio(t *testing.T, bin string, client *mcp.Client, env ...string) (*mcp.ClientSession, *exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--transport", "stdio")
	cmd.Env = append(os.Environ(), env...)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	t.Cleanup(func() { s.Close() })
	return s, cmd, stderr
}

// agent is a plain MCP client named as an agent would be.
func agent(name, version string) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: name, Version: version}, nil)
}

// wantNoDataDir fails the test if anything made the data directory: what a
// server with memory storage promises.
func wantNoDataDir(t *testing.T, data string) {
	t.Helper()
	if _, err := os.Stat(data); !errors.Is(err, fs.ErrNotExist) {
		entries, _ := filepath.Glob(filepath.Join(data, "*", "*"))
		t.Fatalf("memory storage wrote to the data directory: %v (%v)", err, entries)
	}
}
