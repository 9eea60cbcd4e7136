package main

import (
	"io"
	"os/exec"
	"testing"
	"time"
)

// TestTeamSimShort runs a small team through the real binary, git daemon
// (or the remote's path when git daemon is missing) and MCP clients, and
// requires what a long run must show: every session on every ledger,
// identical, and a remote that passes git fsck --strict. No figure is
// asserted.
func TestTeamSimShort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three servers")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	o := options{servers: 3, agents: 3, n: 3, duration: 3 * time.Second, pace: 50 * time.Millisecond,
		interval: time.Second, poll: 100 * time.Millisecond, settle: 3 * time.Minute, remote: "daemon"}
	r, err := run(o, io.Discard)
	if err != nil {
		if r != nil {
			r.print(testWriter{t})
		}
		t.Fatal(err)
	}
	if r.sessions < 3+3 || len(r.checks) != 3 {
		t.Errorf("sessions %d, checks %q", r.sessions, r.checks)
	}
	if len(r.delays) == 0 {
		t.Errorf("no propagation was observed")
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
