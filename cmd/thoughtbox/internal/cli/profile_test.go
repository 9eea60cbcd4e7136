package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/config"
)

// TestProfilesForAnyCommand: the profile variables work for a command
// other than serve, and a profile that cannot be written is an error that
// names the variable.
func TestProfilesForAnyCommand(t *testing.T) {
	dir := t.TempDir()
	cpu, heap := filepath.Join(dir, "cpu.pb"), filepath.Join(dir, "heap.pb")
	vars := map[string]string{"THOUGHTBOX_DATA_DIR": filepath.Join(dir, "data"), "HOME": "/nonexistent",
		config.EnvCPUProfile: cpu, config.EnvHeapProfile: heap}
	if code, _, stderr := run(t, vars, "start", "Profiled"); code != 0 {
		t.Fatalf("start: exit %d: %s", code, stderr)
	}
	if code, _, stderr := run(t, vars, "sessions"); code != 0 {
		t.Fatalf("sessions: exit %d: %s", code, stderr)
	}
	for _, p := range []string{cpu, heap} {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// pprof's format is gzipped protocol buffers.
		if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			t.Fatalf("%s is not a profile: % x", p, data[:min(len(data), 8)])
		}
	}
	vars[config.EnvCPUProfile] = filepath.Join(dir, "missing", "cpu.pb")
	code, _, stderr := run(t, vars, "sessions")
	if code == 0 || !strings.Contains(stderr, config.EnvCPUProfile) {
		t.Fatalf("an unwritable profile: exit %d, stderr %q", code, stderr)
	}
}
