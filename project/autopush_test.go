package project

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	gitremote "github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// remoteCount is the number of commits of a session's main chain on the
// remote, 0 when the remote lacks it.
func remoteCount(t *testing.T, remote, id string) int {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", remote, "rev-list", "--count", "refs/heads/sessions/"+id+"/main").Output()
	if err != nil {
		return 0
	}
	var n int
	for _, c := range strings.TrimSpace(string(out)) {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestAutoPushInterval: with an interval, an open session that gained
// thoughts is pushed at the next tick; without one, only closing pushes.
func TestAutoPushInterval(t *testing.T) {
	for _, every := range []time.Duration{0, 20 * time.Millisecond} {
		remote := bareRemote(t)
		s, err := gitstore.Open(filepath.Join(t.TempDir(), "ledger.git"), gitstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		log := &syncBuffer{}
		p := newAutoPusher(s, remote, "", every, gitremote.TransferOptions{}, log.logger(), nil)
		defer func() { t.Log(log.String()) }()
		l := ledger.New(s, ledger.Options{Events: p})
		ctx := context.Background()
		sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "open"}, ledger.Author{Name: "a"})
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range []string{"one", "two"} {
			if _, err := l.AddThought(ctx, sess.ID, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, ledger.Author{Name: "a"}); err != nil {
				t.Fatal(err)
			}
		}
		if every == 0 {
			p.close()
			s.Close()
			if n := remoteCount(t, remote, sess.ID); n != 0 {
				t.Errorf("without an interval an open session reached the remote (%d commits)", n)
			}
			continue
		}
		waitRemote(t, remote, sess.ID, 3, log)
		if _, err := l.AddThought(ctx, sess.ID, ledger.ThoughtInput{Thought: "three", NextThoughtNeeded: true}, ledger.Author{Name: "a"}); err != nil {
			t.Fatal(err)
		}
		// A thought added while the first push was under way must not be
		// forgotten by it.
		waitRemote(t, remote, sess.ID, 4, log)
		p.close()
		s.Close()
	}
}

// waitRemote waits for the asynchronous push to bring the remote's chain
// to n commits; a minute without it is a failure, not a slow machine.
func waitRemote(t *testing.T, remote, id string, n int, log *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for remoteCount(t, remote, id) != n {
		if time.Now().After(deadline) {
			t.Fatalf("the remote has %d commits of the session, want %d; log:\n%s", remoteCount(t, remote, id), n, log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAutoPushIntervalFailureLoggedOnce: with an interval, a remote that
// is down is logged once, not once a tick, and its recovery is logged.
func TestAutoPushIntervalFailureLoggedOnce(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	remote := filepath.Join(t.TempDir(), "team.git")
	s, err := gitstore.Open(filepath.Join(t.TempDir(), "ledger.git"), gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	log := &syncBuffer{}
	p := newAutoPusher(s, remote, "", 10*time.Millisecond, gitremote.TransferOptions{}, log.logger(), nil)
	defer p.close()
	l := ledger.New(s, ledger.Options{Events: p})
	ctx := context.Background()
	sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "open"}, ledger.Author{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	think := func(text string) {
		if _, err := l.AddThought(ctx, sess.ID, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: true}, ledger.Author{Name: "a"}); err != nil {
			t.Fatal(err)
		}
	}
	attempts := func() int { p.mu.Lock(); defer p.mu.Unlock(); return p.pushes }
	for i := range 3 {
		before := attempts()
		think(fmt.Sprintf("thought %d", i+1))
		for attempts() == before {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if got := log.String(); strings.Count(got, `level=WARN msg="auto-push failed`) != 1 || !strings.Contains(got, "remote="+remote) {
		t.Fatalf("three failed pushes logged as:\n%s", got)
	}
	if out, err := exec.Command("git", "init", "--bare", "-q", remote).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	think("thought 4")
	waitRemote(t, remote, sess.ID, 5, log)
	for !strings.Contains(log.String(), `msg="auto-push works again" remote=`+remote) {
		time.Sleep(5 * time.Millisecond)
	}
}
