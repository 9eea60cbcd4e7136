// Package testfixture finds the fixtures in the module's top-level
// testdata directory, which tests of several packages share, and installs
// them where a test wants them.
//
// The small ledger (testdata/ledger/small.fi) is a real Thoughtbox ledger
// as a git fast-import stream: two sessions (one with a revision, a branch
// and a closing thought, one still open) and a knowledge zone with a
// pattern and a note, written by the ledger and gitstore themselves
// (TestSmallLedgerIsCurrent regenerates it; -update rewrites it). A test
// gets it as a bare repository with SmallLedger, through the git CLI only,
// so that the tests of gitstore can use it as well as those of the CLI and
// the Observatory.
package testfixture

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// The small ledger's sessions, as the generator names them.
const (
	// CacheSession is "Why the cache misses" (alice): thoughts 1 to 5
	// on its main chain, 4 revising 2 and 5 closing the session, and
	// branch "warmup" forked at 3 with thoughts 4 and 5.
	CacheSession = "c0ffee00-0000-4000-8000-000000000001"
	// OpenSession is "Naming the release" (bob): 2 thoughts, still open.
	OpenSession = "c0ffee00-0000-4000-8000-000000000002"
	// PatternID and NoteID are the knowledge zone's entries.
	PatternID = "check-the-warmup-job"
	NoteID    = "todo"
)

// Dir is the module's top-level testdata directory.
func Dir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("testfixture: no caller information to find testdata by")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata")
}

// SmallLedgerStream is the path of the small ledger's fast-import stream.
func SmallLedgerStream() string { return filepath.Join(Dir(), "ledger", "small.fi") }

// SmallLedger makes a bare repository at gitDir (which must not exist
// yet, or be empty) holding the small ledger, as a project's repository
// holds it after a flush. It skips the test when git is not installed.
func SmallLedger(t testing.TB, gitDir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed")
	}
	stream, err := os.ReadFile(SmallLedgerStream())
	if err != nil {
		t.Fatalf("the small ledger fixture: %v", err)
	}
	initCmd := exec.Command("git", "init", "--bare", "-q", gitDir)
	initCmd.Env = GitEnv()
	if out, err := initCmd.CombinedOutput(); err != nil {
		t.Fatalf("git init %s: %v\n%s", gitDir, err, out)
	}
	cmd := exec.Command("git", "--git-dir", gitDir, "fast-import", "--quiet")
	cmd.Env = GitEnv()
	cmd.Stdin = bytes.NewReader(stream)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fast-import of %s: %v\n%s", SmallLedgerStream(), err, out)
	}
}

// GitEnv is the environment for a git command a test runs: the test's own
// environment with the user's and the system's Git configuration shut out
// and a fixed identity, so that a test behaves the same on a fresh machine
// with no Git identity as on a developer's with one (and never reads their
// aliases, hooks paths or signing settings).
func GitEnv(extra ...string) []string {
	env := append(os.Environ(),
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Thoughtbox Test",
		"GIT_AUTHOR_EMAIL=test@thoughtbox.invalid",
		"GIT_COMMITTER_NAME=Thoughtbox Test",
		"GIT_COMMITTER_EMAIL=test@thoughtbox.invalid",
	)
	return append(env, extra...)
}
