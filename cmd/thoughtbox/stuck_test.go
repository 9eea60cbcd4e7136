//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// holdLocksEnv, set to "<git dir>|<session id>", makes
// TestLockHolderHelper take the project's log and flush locks and the
// session's lock the way a writer does, say "held", and wait.
const holdLocksEnv = "THOUGHTBOX_TEST_HOLD_LOCKS"

func TestLockHolderHelper(t *testing.T) {
	spec := os.Getenv(holdLocksEnv)
	if spec == "" {
		t.Skip("helper process for TestStuckHolder")
	}
	gitDir, session, _ := strings.Cut(spec, "|")
	tb := filepath.Join(gitDir, "thoughtbox")
	var keep []any
	for _, p := range []string{"log", "flush.lock"} {
		f, err := os.OpenFile(filepath.Join(tb, p), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		rec := durable.RecordIn(f)
		if p == "log" {
			rec = durable.NewRecord(filepath.Join(tb, "log.holder"))
		}
		if err := durable.Lock(context.Background(), f, rec, time.Minute); err != nil {
			t.Fatal(err)
		}
		keep = append(keep, f, rec)
	}
	h, err := durable.NewMutex(filepath.Join(tb, "locks", session+".lock"), time.Minute).Lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	keep = append(keep, h)
	fmt.Println("held")
	time.Sleep(time.Hour)
	fmt.Println(keep...)
}

// TestStuckHolder: a process that holds every lock of a project and is
// then suspended (SIGSTOP) must not hang the others. sessions, show and
// export answer at once; add gives up after THOUGHTBOX_LOCK_TIMEOUT with
// the holder's pid named; once the holder is killed, add works again.
func TestStuckHolder(t *testing.T) {
	bin := thoughtboxBinary(t)
	data := t.TempDir()
	run := func(timeout string, args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"--data-dir", data}, args...)...)
		cmd.Env = append(os.Environ(), "THOUGHTBOX_LOCK_TIMEOUT="+timeout)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("10s", "start", "stuck holder")
	if err != nil {
		t.Fatalf("start: %v\n%s", err, out)
	}
	id := strings.TrimSpace(out)
	if out, err := run("10s", "add", id, "first thought"); err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	gitDir := filepath.Join(data, "projects", "_default.git")
	if err := os.MkdirAll(filepath.Join(gitDir, "thoughtbox", "locks"), 0o755); err != nil {
		t.Fatal(err)
	}

	holder := exec.Command(os.Args[0], "-test.run=^TestLockHolderHelper$")
	holder.Env = append(os.Environ(), holdLocksEnv+"="+gitDir+"|"+id)
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("holder: %q %v", line, err)
	}
	if err := holder.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}

	// A reader would hang for ever if it waited; an hour of timeout
	// proves it does not wait at all.
	for _, args := range [][]string{{"sessions"}, {"show", id}, {"export", id}, {"verify", id}} {
		out, err := run("1h", args...)
		if err != nil {
			t.Errorf("%s with the locks held by a stopped process: %v\n%s", args[0], err, out)
		} else if args[0] != "verify" && !strings.Contains(out, "first thought") && !strings.Contains(out, "stuck holder") {
			t.Errorf("%s does not show the session:\n%s", args[0], out)
		}
	}

	out, err = run("300ms", "add", id, "second thought")
	if err == nil {
		t.Fatalf("add succeeded while a stopped process held the session:\n%s", out)
	}
	for _, want := range []string{"pid " + strconv.Itoa(holder.Process.Pid), "since", "THOUGHTBOX_LOCK_TIMEOUT"} {
		if !strings.Contains(out, want) {
			t.Errorf("add's error does not mention %q:\n%s", want, out)
		}
	}

	holder.Process.Kill()
	holder.Wait()
	if out, err := run("10s", "add", id, "second thought"); err != nil {
		t.Fatalf("add after the holder was killed: %v\n%s", err, out)
	}
	out, err = run("10s", "show", id)
	if err != nil || !strings.Contains(out, "second thought") {
		t.Fatalf("show after: %v\n%s", err, out)
	}
}
