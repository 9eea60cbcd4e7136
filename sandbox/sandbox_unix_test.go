//go:build unix

package sandbox

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// alive says whether a process is there; the child is reaped by the time
// any error reaches the caller, so a dead one is gone entirely.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return !errors.Is(err, syscall.ESRCH)
}

// TestNoInheritedFiles: the child holds its three pipes and nothing else,
// not even a descriptor the parent left inheritable, and gets no
// environment but its own marker (and glibc's arena limit).
func TestNoInheritedFiles(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd here")
	}
	// Opened without O_CLOEXEC, as a shell or supervisor might leave one.
	fd, err := syscall.Open(os.Args[0], syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	t.Setenv("THOUGHTBOX_SECRET", "token")
	s := start(t, Config{})
	r := mustRun(t, s, `JSON.stringify({files: openFiles(), env: environ(), cwd: cwd()})`)
	var got struct {
		Files []string
		Env   []string
		Cwd   string
	}
	if err := jsonUnmarshal(r.Value, &got); err != nil {
		t.Fatalf("%v: %+v", err, r)
	}
	for _, f := range got.Files {
		n, target, _ := strings.Cut(f, " -> ")
		if n == "0" || n == "1" || n == "2" {
			if !strings.HasPrefix(target, "pipe:") {
				t.Errorf("descriptor %s", f)
			}
			continue
		}
		if !strings.HasPrefix(target, "anon_inode:") { // the Go runtime's poller
			t.Errorf("the child holds descriptor %s", f)
		}
	}
	if len(got.Env) != 2 || got.Env[0] != childEnv+"="+protocolVersion || got.Env[1] != "MALLOC_ARENA_MAX=1" {
		t.Errorf("environment %q", got.Env)
	}
	if got.Cwd != os.TempDir() {
		t.Errorf("working directory %s", got.Cwd)
	}
}
