package gitstore_test

// Durability (issue 2): an acknowledged thought survives kill -9.
//
// TestCrashSIGKILL starts a writer process (see multiprocess_test.go), kills
// it with SIGKILL at a random moment, and checks the repository, many times
// over one repository so that state accumulates. The default run is short;
// for a longer one:
//
//	go test ./gitstore/ -run TestCrashSIGKILL -crash.iterations=200
//	THOUGHTBOX_CRASH_ITERATIONS=200 go test -run TestCrashSIGKILL ./gitstore/
//
// THOUGHTBOX_TEST_SEED replays the random choices (kill delays, flush
// intervals, what the writers write); the kill moments themselves still
// depend on timing. THOUGHTBOX_TEST_KEEP_REPO=<dir> keeps the repository of
// TestCrashSIGKILL there for a post-mortem.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

var crashIterations = flag.Int("crash.iterations", 0,
	"kill -9 iterations of TestCrashSIGKILL (default 60, or $THOUGHTBOX_CRASH_ITERATIONS)")

func crashIterationCount(t *testing.T) int {
	if *crashIterations > 0 {
		return *crashIterations
	}
	if s := os.Getenv("THOUGHTBOX_CRASH_ITERATIONS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("THOUGHTBOX_CRASH_ITERATIONS=%q: want a positive number", s)
		}
		return n
	}
	return 60
}

// TestCrashSIGKILL: each iteration starts a writer on the same repository
// with a random flush interval (5–50 ms); the writer reuses two long-lived
// sessions (the same two for 20 iterations) and starts one of its own, and adds auto-numbered main thoughts,
// branch thoughts (new and continued branches) and revisions, printing an ack
// for each. 5–300 ms after the start (even iterations: during start-up and
// recovery, or while writing) or after it starts writing (odd ones: while
// writing and flushing), it is killed with SIGKILL. Then:
//
//   - before anything reopens the repository: every loose ref holds a whole
//     object id, and (every third iteration) git fsck --strict passes, since
//     refs on disk must only ever point at complete objects;
//   - gitstore.Open recovers the log; every acknowledged thought is where it
//     was acknowledged with its text, nothing is stored twice, every session
//     loads and passes its integrity check, and after Close git reads the
//     refs the store loaded;
//   - git fsck --strict passes, and no lock or temporary file is left.
func TestCrashSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("kills writer processes for a while; skipped with -short")
	}
	iterations := crashIterationCount(t)
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0x6b696c6c))
	dir := filepath.Join(t.TempDir(), "p.git")
	if keep := os.Getenv("THOUGHTBOX_TEST_KEEP_REPO"); keep != "" {
		// for post-mortems: the repository outlives the test
		dir = filepath.Join(keep, fmt.Sprintf("crash-%d.git", seed))
	}
	t.Logf("repository %s", dir)
	if !hasGit() {
		t.Log("the git CLI is not installed: the git fsck and git ref checks are skipped")
	}

	acked := map[ackKey]ack{}
	var announced []string
	seenSession := map[string]bool{}
	flushes := []time.Duration{5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond}
	garbage := map[string]int{} // leftover -> the iteration it first appeared after
	var prevRefs map[string]string
	var killedStarting, killedIdle, killedWriting, leftLocks, fscksBefore, fscksAfter int
	var verifyTime, fsckTime time.Duration
	start := time.Now()
	for it := range iterations {
		delay := time.Duration(5+rng.IntN(296)) * time.Millisecond
		flush := flushes[rng.IntN(len(flushes))]
		// Two long-lived sessions, replaced every 20 iterations so that
		// loading them stays cheap, and one new session per iteration.
		sessions := []string{fmt.Sprintf("crash-a%d", it/20), fmt.Sprintf("crash-b%d", it/20), fmt.Sprintf("crash-i%03d", it)}
		w := startWriter(t, writerConfig{
			Repo: dir, Flush: flush, Name: fmt.Sprintf("I%d", it), Seed: seed ^ uint64(it)<<32,
			Sessions: sessions, Mix: true, Max: 1 << 30, Deadline: time.Hour,
		})
		// Half the kills count from the start (so many land in start-up and
		// log recovery), half from the moment the writer starts writing.
		from := "start"
		if it%2 == 1 {
			from = "writing"
			w.waitFor("writing", 1, 30*time.Second)
		}
		time.Sleep(delay)
		if w.kill() {
			t.Fatalf("iteration %d: the writer exited before it was killed:\n%s", it, summarize(w.output()))
		}
		if w.raced() {
			t.Errorf("iteration %d: the race detector fired in the writer:\n%s", it, summarize(w.output()))
		}
		acks := w.acks(t)
		addAcks(t, acked, acks)
		switch {
		case w.count("ready") == 0:
			killedStarting++
		case len(acks) == 0:
			killedIdle++
		default:
			killedWriting++
		}
		w.mu.Lock()
		for _, l := range w.lines {
			if id, ok := strings.CutPrefix(l, "session "); ok && !seenSession[id] {
				seenSession[id] = true
				announced = append(announced, id)
			}
		}
		w.mu.Unlock()

		when := fmt.Sprintf("iteration %d (killed %v after %s, flush every %v, %d acks)", it, delay, from, flush, len(acks))
		if locks := checkRefFiles(t, dir, when+", right after the kill"); len(locks) > 0 {
			leftLocks++
			t.Logf("%s: the kill left %v", when, locks)
		}
		t0 := time.Now()
		if it%3 == 2 && fsck(t, dir, when+", right after the kill, before reopening") {
			fscksBefore++
		}
		t1 := time.Now()
		// The sessions this writer touched are checked after every kill,
		// all of them every tenth time; the refs of the others must not
		// have moved.
		full := it%10 == 9 || it == iterations-1
		touched := func(id string) bool { return slices.Contains(sessions, id) }
		only := touched
		if full {
			only = nil
		}
		rc := verifyRepo(t, dir, acked, announced, only, when+", after reopening")
		for ref, id := range prevRefs {
			if sid, _, _ := strings.Cut(strings.TrimPrefix(ref, "refs/heads/sessions/"), "/"); !touched(sid) && rc.refs[ref] != id {
				t.Errorf("%s: %s moved from %s to %q, but no writer wrote that session", when, ref, id, rc.refs[ref])
			}
		}
		prevRefs = rc.refs
		t2 := time.Now()
		if (it%3 == 0 || it == iterations-1) && fsck(t, dir, when+", after reopening") {
			fscksAfter++
		}
		fsckTime += t1.Sub(t0) + time.Since(t2)
		verifyTime += t2.Sub(t1)
		// Leftovers are reported at the end, once each, so that a stray
		// file does not stop the hunt for lost thoughts.
		for _, p := range leftovers(dir) {
			if _, seen := garbage[p]; !seen {
				garbage[p] = it
				t.Logf("%s: after a clean Open+Close: %s", when, p)
			}
		}
		if t.Failed() {
			t.Fatalf("stopping at iteration %d of %d; seed %d; repository %s", it, iterations, seed, dir)
		}
	}
	packs, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.pack"))
	if _, err := os.Stat(filepath.Join(dir, "packed-refs")); err == nil {
		t.Log("the store packed its refs during the run (packed-refs exists)")
	}
	t.Logf("%d kills in %v (reopen+verify %v, git fsck %v): %d during start-up, %d before the first ack, %d while writing; "+
		"%d left ref .lock files; %d acknowledged thoughts checked; git fsck %d times right after a kill, %d after reopening; "+
		"%d packs in the repository",
		iterations, time.Since(start).Round(time.Millisecond), verifyTime.Round(time.Millisecond), fsckTime.Round(time.Millisecond),
		killedStarting, killedIdle, killedWriting, leftLocks, len(acked), fscksBefore, fscksAfter, len(packs))
	for p, it := range garbage {
		t.Errorf("a clean Open+Close left this behind (first after iteration %d): %s", it, p)
	}
	if killedWriting == 0 && iterations >= 10 {
		t.Errorf("no writer was killed while writing: the test proved nothing")
	}
}

// TestCrashLeftovers recreates, file by file, what a writer killed in the
// middle of a flush leaves behind, over a log that holds unflushed thoughts,
// and checks that Open cleans up, recovers the thoughts and publishes every
// ref (issue 2: "Stale .lock and temporary object files left by a killed
// writer are cleaned up on start"). Each leftover below was seen after real
// kills in TestCrashSIGKILL; here they are made deterministic:
//   - a <ref>.lock that writeDiskRef created but had not yet renamed over the
//     ref, for a session ref and for refs/heads/main (the README commit is
//     published by the first flush of a new repository);
//   - a temporary pack and a temporary log replacement;
//   - a pack-<id>.pack whose .idx was never renamed into place (killed
//     between the two renames of a new pack, or between the two removals of
//     a merged-away one), which git counts as garbage.
func TestCrashLeftovers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a writer process; skipped with -short")
	}
	refLock := func(ref string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			lock := filepath.Join(dir, filepath.FromSlash(ref)+".lock")
			if err := os.MkdirAll(filepath.Dir(lock), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(lock, []byte("0123456789abcdef0123456789abcdef01234567\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		leave func(t *testing.T, dir string)
	}{
		{"session-ref-lock", refLock("refs/heads/sessions/crash-left/main")},
		{"main-ref-lock", refLock("refs/heads/main")},
		{"temporary-files", func(t *testing.T, dir string) {
			for name, data := range map[string]string{
				"objects/pack/tmp_pack_X1y2Z3": "PACK\x00\x00\x00\x02",
				"objects/pack/tmp_idx_Q7w8E9":  "\xfftOc",
				"thoughtbox/log.tmp":           "TBXLOG",
			} {
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), []byte(data), 0o444); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"pack-without-idx", func(t *testing.T, dir string) {
			// A valid, empty pack, named by its checksum as packs are.
			pack := []byte("PACK\x00\x00\x00\x02\x00\x00\x00\x00")
			sum := sha1.Sum(pack)
			pack = append(pack, sum[:]...)
			name := filepath.Join(dir, "objects", "pack", "pack-"+hex.EncodeToString(sum[:])+".pack")
			if err := os.WriteFile(name, pack, 0o444); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p.git")
			// A writer that never flushes (FlushInterval 1h): the README
			// commit, the session and its thoughts stay in the log.
			w := startWriter(t, writerConfig{
				Repo: dir, Flush: time.Hour, Name: "L", Seed: 1,
				Sessions: []string{"crash-left"}, Max: 1 << 30, Deadline: time.Hour,
			})
			w.waitFor("ack ", 20, 30*time.Second)
			if w.kill() {
				t.Fatalf("the writer exited by itself:\n%s", summarize(w.output()))
			}
			acks := w.acks(t)
			if len(acks) == 0 {
				t.Fatalf("the writer acknowledged nothing:\n%s", summarize(w.output()))
			}
			tc.leave(t, dir)

			acked := map[ackKey]ack{}
			addAcks(t, acked, acks)
			s, err := gitstore.Open(dir, gitstore.Options{})
			if err != nil {
				t.Fatalf("Open after a writer was killed mid-flush: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			verifyRepo(t, dir, acked, []string{"crash-left"}, nil, "after recovery")
			if hasGit() {
				if out, err := git(dir, "rev-parse", "--verify", "main"); err != nil {
					t.Errorf("the README branch is not published: %v", err)
				} else if _, err := git(dir, "show", strings.TrimSpace(out)+":README.md"); err != nil {
					t.Error(err)
				}
				fsck(t, dir, "after recovery")
			}
			checkNoLeftovers(t, dir, "after recovery")
		})
	}
}

// TestCrashLogReplayIsIdempotent opens and closes a recovered repository
// several times, and has a second writer continue the sessions, checking
// that replaying never duplicates or renumbers anything.
func TestCrashLogReplayIsIdempotent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts writer processes; skipped with -short")
	}
	dir := filepath.Join(t.TempDir(), "p.git")
	acked := map[ackKey]ack{}
	for round := range 3 {
		w := startWriter(t, writerConfig{
			Repo: dir, Flush: time.Hour, Name: fmt.Sprintf("R%d", round), Seed: uint64(round),
			Sessions: []string{"crash-replay"}, Mix: true, Max: 1 << 30, Deadline: time.Hour,
		})
		w.waitFor("ack ", 30, 30*time.Second)
		w.kill()
		addAcks(t, acked, w.acks(t))
		for range 2 { // replay, then open a repository with nothing to replay
			rc := verifyRepo(t, dir, acked, []string{"crash-replay"}, nil, fmt.Sprintf("round %d", round))
			if rc.thoughts < len(acked) {
				t.Fatalf("round %d: %d thoughts stored, %d acknowledged", round, rc.thoughts, len(acked))
			}
		}
	}
	s, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := ledger.New(s, ledger.Options{}).Load(context.Background(), "crash-replay")
	if err != nil {
		t.Fatal(err)
	}
	if v.Graph.Len() < len(acked) {
		t.Errorf("%d thoughts stored, %d acknowledged", v.Graph.Len(), len(acked))
	}
}
