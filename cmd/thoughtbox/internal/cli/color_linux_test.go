package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the program writes to tty as to a
// terminal, and the test reads what it wrote from ptm.
func openPTY(t *testing.T) (ptm, tty *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(ptm.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tty.Close(); ptm.Close() })
	return ptm, tty
}

// sessionsOn runs `thoughtbox sessions` with args and stdout on out, and
// returns what the terminal (or pipe) received.
func sessionsOn(t *testing.T, vars map[string]string, args ...string) string {
	t.Helper()
	ptm, tty := openPTY(t)
	got := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			b.Write(buf[:n])
			if err != nil || bytes.Contains(b.Bytes(), []byte("END-OF-TEST")) {
				got <- b.String()
				return
			}
		}
	}()
	env := Env{Stdout: tty, Stderr: io.Discard, LookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	if code := Main(context.Background(), append([]string{"sessions"}, args...), env); code != ExitOK {
		t.Fatalf("sessions %v: exit %d", args, code)
	}
	tty.WriteString("END-OF-TEST\n")
	return <-got
}

// TestSessionsColour: on a terminal the sessions table has its header in
// bold and ids in yellow; --no-color, NO_COLOR and --format json have
// none, and a title's own escape sequence is still spelled out.
func TestSessionsColour(t *testing.T) {
	vars := map[string]string{"THOUGHTBOX_DATA_DIR": t.TempDir(), "HOME": "/nonexistent"}
	if code, _, stderr := run(t, vars, "start", "Red \x1b[31m title"); code != ExitOK {
		t.Fatalf("start: %s", stderr)
	}
	out := sessionsOn(t, vars)
	if !strings.Contains(out, sgrBold+"ID") || !strings.Contains(out, sgrYellow+"c0ffee00"+sgrReset) {
		t.Errorf("no colour on a terminal: %q", out)
	}
	if strings.Contains(out, "\x1b[31m") || !strings.Contains(out, `Red \x1b[31m title`) {
		t.Errorf("the title's escape sequence reached the terminal: %q", out)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"--no-color", nil, []string{"--no-color"}},
		{"NO_COLOR", map[string]string{"NO_COLOR": "1"}, nil},
		{"--format json", nil, []string{"--format", "json"}},
	} {
		v := map[string]string{}
		for k, x := range vars {
			v[k] = x
		}
		for k, x := range tc.env {
			v[k] = x
		}
		if out := sessionsOn(t, v, tc.args...); strings.Contains(out, "\x1b[") {
			t.Errorf("%s: colour anyway: %q", tc.name, out)
		}
	}
	// Not a terminal: no colour.
	if code, stdout, _ := run(t, vars, "sessions"); code != ExitOK || strings.Contains(stdout, "\x1b") || !strings.Contains(stdout, "c0ffee00  ") {
		t.Errorf("sessions into a buffer: %q", stdout)
	}
}

// TestIsTerminalOnPTY: a pseudo-terminal is a terminal (the other half of
// TestIsTerminalRefusesNonTerminals, which needs no PTY).
func TestIsTerminalOnPTY(t *testing.T) {
	_, tty := openPTY(t)
	if !isTerminal(tty) {
		t.Error("isTerminal(a pseudo-terminal) = false")
	}
}
