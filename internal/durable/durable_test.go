package durable

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var childHeld *Held

// A test binary run with DURABLE_TEST_HOLD=<path> takes the Mutex at path,
// says "held" on stdout and waits to be killed.
func TestMain(m *testing.M) {
	if p := os.Getenv("DURABLE_TEST_HOLD"); p != "" {
		h, err := NewMutex(p, time.Minute).Lock(context.Background())
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println("held")
		childHeld = h // kept reachable: a collected *os.File closes, releasing the lock
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

// holdInChild starts a process that holds the mutex at path.
func holdInChild(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DURABLE_TEST_HOLD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "held\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	return cmd
}

func TestLockOfKilledProcessIsReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chain.lock")
	child := holdInChild(t, path)

	_, err := NewMutex(path, 20*time.Millisecond).Lock(context.Background())
	var he *HeldError
	if !errors.As(err, &he) || !errors.Is(err, ErrHeld) {
		t.Fatalf("lock held by a live child: got %v, want a HeldError", err)
	}
	if he.Holder == nil || he.Holder.PID != child.Process.Pid {
		t.Fatalf("holder = %+v, want pid %d", he.Holder, child.Process.Pid)
	}
	if !strings.Contains(he.Holder.Command, filepath.Base(os.Args[0])) {
		t.Errorf("holder command %q does not name the child's binary", he.Holder.Command)
	}
	for _, want := range []string{path, fmt.Sprintf("pid %d", child.Process.Pid), "since"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not mention %q", err, want)
		}
	}

	child.Process.Kill()
	child.Wait()
	// The OS released the dead child's lock: no wait at all is needed.
	h, err := NewMutex(path, 0).Lock(context.Background())
	if err != nil {
		t.Fatalf("lock of a killed holder: %v", err)
	}
	h.Unlock()
	// Its record names a dead pid, which is no holder.
	if h, ok := ReadHolder(path); ok && h.PID == child.Process.Pid {
		t.Errorf("stale record of dead pid %d taken as the holder", h.PID)
	}
}

func TestStaleRecordIgnored(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	rec := fmt.Sprintf("pid %d\nsince %s\ncommand old\n", dead, time.Now().UTC().Format(time.RFC3339Nano))
	if err := os.WriteFile(path, []byte(rec), 0o644); err != nil {
		t.Fatal(err)
	}
	if h, ok := ReadHolder(path); ok {
		t.Fatalf("record of exited pid %d read as holder %+v", dead, h)
	}
	rec = fmt.Sprintf("pid %d\nsince %s\ncommand me\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339Nano))
	os.WriteFile(path, []byte(rec), 0o644)
	if h, ok := ReadHolder(path); !ok || h.PID != os.Getpid() || h.Command != "me" {
		t.Fatalf("live record read as %+v, %v", h, ok)
	}
}

func TestLockTimesOutAndHonoursContext(t *testing.T) {
	dir := t.TempDir()
	a, err := os.Create(filepath.Join(dir, "l"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	rec := NewRecord(filepath.Join(dir, "l.holder"))
	defer rec.Close()
	if err := Lock(context.Background(), a, rec, time.Second); err != nil {
		t.Fatal(err)
	}
	b, err := os.Open(filepath.Join(dir, "l"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := TryLock(b, nil); ok || err != nil {
		t.Fatalf("TryLock of a held lock: %v, %v", ok, err)
	}
	err = Lock(context.Background(), b, rec, 10*time.Millisecond)
	var he *HeldError
	if !errors.As(err, &he) || he.Holder == nil || he.Holder.PID != os.Getpid() {
		t.Fatalf("got %v, want a HeldError naming this process", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Lock(ctx, b, nil, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	Unlock(a)
	if err := Lock(context.Background(), b, nil, time.Hour); err != nil {
		t.Fatalf("released lock: %v", err)
	}
}

// TestMutexAlternates: a holder that lets go and asks again at once must
// wait for the process already waiting. Without the gate the returning
// holder usually wins.
func TestMutexAlternates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m")
	for round := 0; round < 20; round++ {
		a := NewMutex(path, time.Minute)
		b := NewMutex(path, time.Minute)
		ha, err := a.Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var order []string
		bDone := make(chan struct{})
		go func() {
			defer close(bDone)
			hb, err := b.Lock(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, "b")
			mu.Unlock()
			hb.Unlock()
		}()
		// Wait until b is queued: it holds the gate.
		gate, _ := os.Open(path + ".gate")
		for {
			ok, _ := TryLock(gate, nil)
			if !ok {
				break
			}
			Unlock(gate)
			time.Sleep(100 * time.Microsecond)
		}
		gate.Close()
		ha.Unlock()
		ha, err = a.Lock(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		order = append(order, "a")
		mu.Unlock()
		ha.Unlock()
		<-bDone
		if strings.Join(order, "") != "ba" {
			t.Fatalf("round %d: order %v, want the waiter b first", round, order)
		}
	}
}

// TestRenameReplacesAtomically: readers opening the target while it is
// replaced over and over always find one whole version.
func TestRenameReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "ref")
	version := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 4096) }
	if err := os.WriteFile(target, version(0), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				data, err := os.ReadFile(target)
				if err != nil {
					errs <- fmt.Errorf("read during replace: %w", err)
					return
				}
				if len(data) != 4096 || bytes.Count(data, data[:1]) != 4096 {
					errs <- fmt.Errorf("read a mixed or partial version (%d bytes)", len(data))
					return
				}
			}
		}()
	}
	for i := 1; i <= 100; i++ {
		tmp := filepath.Join(dir, "ref.tmp")
		f, err := OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(version(i)); err != nil {
			t.Fatal(err)
		}
		if err := Datasync(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := Rename(tmp, target); err != nil {
			t.Fatal(err)
		}
	}
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if data, _ := os.ReadFile(target); !bytes.Equal(data, version(100)) {
		t.Error("target does not hold the last version")
	}
}

// TestFileIDFollowsRename: PathID tells whether a path still names an
// open file — how the log's readers notice it was replaced.
func TestFileIDFollowsRename(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "log")
	f, err := OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fid, err := FileID(f)
	if err != nil {
		t.Fatal(err)
	}
	if pid, err := PathID(p); err != nil || pid != fid {
		t.Fatalf("same file: %x vs %x, %v", pid, fid, err)
	}
	os.WriteFile(p+".tmp", []byte("new"), 0o644)
	// The open file may be replaced under its open handle (on Windows
	// thanks to OpenFile's FILE_SHARE_DELETE).
	if err := Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
	if pid, err := PathID(p); err != nil || pid == fid {
		t.Fatalf("replaced file: %x vs %x, %v", pid, fid, err)
	}
	if _, err := PathID(filepath.Join(dir, "none")); !os.IsNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
}
