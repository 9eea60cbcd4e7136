package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/project"
)

// TestVerifyRepairLog: a flipped byte in the middle of the write-ahead log
// (the acknowledged thoughts of a process that died are still there) stops
// every command with the file and the offset, changes nothing, and
// 'verify --repair' keeps every record that checks out and says what it
// could not.
func TestVerifyRepairLog(t *testing.T) {
	if _, err := exec.LookPath("cp"); err != nil {
		t.Skip("cp is needed to copy a live repository")
	}
	ctx := context.Background()
	liveDir := t.TempDir()
	live := filepath.Join(liveDir, "projects", "_default.git")
	p := openTestProject(t, liveDir, project.Options{FlushInterval: time.Hour})
	defer p.Close()
	l := p.Ledger()
	var ids []string
	for i := 0; i < 3; i++ {
		sess, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: fmt.Sprintf("session %d", i)}, ledger.Author{Name: "t"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
	}
	for n := 1; n <= 8; n++ {
		for _, id := range ids {
			if _, err := l.AddThought(ctx, id, ledger.ThoughtInput{Thought: fmt.Sprintf("thought %d", n), NextThoughtNeeded: true}, ledger.Author{Name: "t"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The data directory gets the repository as a killed writer leaves it:
	// every thought in the log, none published.
	dataDir := t.TempDir()
	repo := filepath.Join(dataDir, "projects", "_default.git")
	os.MkdirAll(filepath.Dir(repo), 0o755)
	if out, err := exec.Command("cp", "-a", live, repo).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	logPath := filepath.Join(repo, "thoughtbox", "log")
	data, _ := os.ReadFile(logPath)
	offs := recordStarts(data)
	victim := offs[len(offs)/2]
	data[victim+12] ^= 0x01
	os.WriteFile(logPath, data, 0o644)
	env := map[string]string{"THOUGHTBOX_DATA_DIR": dataDir, "HOME": "/nonexistent"}

	code, _, stderr := run(t, env, "sessions")
	if code != ExitFailure || !strings.Contains(stderr, logPath) || !strings.Contains(stderr, fmt.Sprintf("damaged at offset %d", victim)) || !strings.Contains(stderr, "verify --repair") {
		t.Fatalf("sessions on a damaged log: exit %d, stderr:\n%s", code, stderr)
	}
	if after, _ := os.ReadFile(logPath); string(after) != string(data) {
		t.Fatal("a command changed the damaged log")
	}

	code, stdout, stderr := run(t, env, "verify", "--repair")
	if !strings.Contains(stderr, "the original is kept as "+logPath+".damaged-") ||
		!strings.Contains(stderr, "kept ") || !strings.Contains(stderr, fmt.Sprintf("lost bytes %d to", victim)) {
		t.Fatalf("verify --repair: exit %d, stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	if code != ExitOK || strings.Count(stdout, "OK ") != 3 {
		t.Fatalf("after the repair every session must verify: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The two sessions the damage did not touch have all their thoughts.
	full := 0
	for _, id := range ids {
		_, out, _ := run(t, env, "show", id, "--format", "json")
		if strings.Contains(out, `"thoughtCount": 8`) {
			full++
		}
	}
	if full != 2 {
		t.Fatalf("%d sessions kept all their thoughts, want 2", full)
	}
}

func recordStarts(data []byte) []int {
	var out []int
	for off := len("TBXLOG2\n"); off+8 <= len(data); {
		n := int(uint32(data[off])<<24 | uint32(data[off+1])<<16 | uint32(data[off+2])<<8 | uint32(data[off+3]))
		if n == 0 {
			break
		}
		out = append(out, off)
		off += 8 + n
	}
	return out
}
