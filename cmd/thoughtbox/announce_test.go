package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"regexp"
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
