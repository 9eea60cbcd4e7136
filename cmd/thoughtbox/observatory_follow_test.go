package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestStandaloneObservatoryFollowsOtherProcesses: `thoughtbox observatory`
// records nothing itself; thoughts that other processes write (here the
// CLI's start and add, each its own process) reach its WebSocket
// subscribers live, without reopening anything.
func TestStandaloneObservatoryFollowsOtherProcesses(t *testing.T) {
	t.Parallel()
	bin := thoughtboxBinary(t)
	data := t.TempDir()
	// No HOST: the Observatory must then bind loopback only.
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOST=") {
			env = append(env, kv)
		}
	}
	env = append(env, "THOUGHTBOX_DATA_DIR="+data)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("thoughtbox %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	uuid := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	id := uuid.FindString(run("start", "Followed from afar"))
	if id == "" {
		t.Fatal("start printed no session id")
	}
	run("add", id, "first, before the Observatory")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "observatory", "--port", "0")
	cmd.Env = env
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	defer func() { cancel(); cmd.Wait() }()
	addr := startAnnounced(t, cmd, 30*time.Second, regexp.MustCompile(`Observatory at http://(\S+?)/`))[0]
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("without HOST the observatory listens on %s, want 127.0.0.1", addr)
	}
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	topic := "reasoning:" + id
	next := func(want string) map[string]any {
		t.Helper()
		ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				t.Fatalf("waiting for %s: %v", want, err)
			}
			var m []json.RawMessage
			if json.Unmarshal(data, &m) != nil || len(m) != 3 {
				t.Fatalf("message %s", data)
			}
			var ev string
			json.Unmarshal(m[1], &ev)
			if ev == want {
				var p map[string]any
				json.Unmarshal(m[2], &p)
				return p
			}
		}
	}
	ws.WriteJSON([]any{"observatory", "subscribe"})
	next("sessions:active")
	ws.WriteJSON([]any{topic, "subscribe"})
	next("session:snapshot")

	run("add", id, "second, from another process")
	p := next("thought:added")
	if th := p["thought"].(map[string]any); th["thought"] != "second, from another process" || th["thoughtNumber"] != float64(2) {
		t.Fatalf("thought:added = %v", p)
	}
	run("add", id, "a branch, from yet another", "--branch", "alt", "--from", "1")
	if p := next("thought:branched"); p["branchId"] != "alt" {
		t.Fatalf("thought:branched = %v", p)
	}
	second := uuid.FindString(run("start", "A second session, started elsewhere"))
	run("add", second, "its first thought")
	if p := next("session:started"); p["session"].(map[string]any)["id"] != second {
		t.Fatalf("session:started = %v", p)
	}
}
