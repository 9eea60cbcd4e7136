package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeRLMSettings runs an RLM thought through the real server with
// its limits set by flags and the environment (seed 004: "maximum 12
// iterations (configurable)"): the root model never says FINAL, so the
// run stops after --rlm-max-iterations turns; a block printing more than
// --rlm-max-output is cut; a block that loops is stopped after
// THOUGHTBOX_RLM_BLOCK_TIMEOUT.
func TestServeRLMSettings(t *testing.T) {
	bin := thoughtboxBinary(t)
	var mu sync.Mutex
	turns := 0
	handler := func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		mu.Lock()
		turns++
		turn := turns
		mu.Unlock()
		code := "print('x'.repeat(1000))"
		if turn == 2 {
			code = "while (true) {}"
		}
		return &mcp.CreateMessageResult{Model: "scripted", Role: "assistant", Content: &mcp.TextContent{Text: "```repl\n" + code + "\n```"}}, nil
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "rlm-agent", Version: "1"}, &mcp.ClientOptions{CreateMessageHandler: handler})
	cmd := exec.Command(bin, "serve", "--transport", "stdio", "--rlm-max-iterations", "3", "--rlm-max-output", "100")
	cmd.Env = append(os.Environ(), "THOUGHTBOX_DATA_DIR="+t.TempDir(), "DISABLE_THOUGHT_LOGGING=1",
		"THOUGHTBOX_RLM_BLOCK_TIMEOUT=300ms", "THOUGHTBOX_RLM_MEMORY=64M")
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	defer s.Close()
	callGateway(t, s, "start_new", map[string]any{"sessionTitle": "limits"})
	callGateway(t, s, "cipher", map[string]any{})
	r := callGateway(t, s, "thought", map[string]any{"thought": "Try it.", "nextThoughtNeeded": true, "rlm": true, "rlmQuery": "Loop."})
	var reply struct {
		RLM struct {
			Status     string
			Iterations int
			Transcript []struct{ Kind, Output, Error string }
		} `json:"rlm"`
	}
	if err := json.Unmarshal([]byte(r.text), &reply); err != nil || r.isError {
		t.Fatalf("rlm reply: %s", r.text)
	}
	if reply.RLM.Status != "iteration_limit" || reply.RLM.Iterations != 3 || turns != 3 {
		t.Fatalf("status %q after %d iterations (%d turns); want iteration_limit after 3: %s", reply.RLM.Status, reply.RLM.Iterations, turns, r.text)
	}
	var repl []struct{ Kind, Output, Error string }
	for _, st := range reply.RLM.Transcript {
		if st.Kind == "repl" {
			repl = append(repl, st)
		}
	}
	if len(repl) != 3 {
		t.Fatalf("%d repl steps, want 3: %s", len(repl), r.text)
	}
	if n := strings.Count(repl[0].Output, "x"); n == 0 || n > 100 {
		t.Errorf("the first block printed %d x's through a 100-byte cap: %q", n, repl[0].Output)
	}
	if !strings.Contains(repl[1].Error, "300ms") {
		t.Errorf("the looping block's error does not name its 300ms limit: %q", repl[1].Error)
	}
}

// TestServeBoundToSession: serve --session (seed 000 ServerConfig
// reasoningSessionId) starts every connection in that session, at stage 1
// as load_context would: after cipher, thoughts go on in it.
func TestServeBoundToSession(t *testing.T) {
	bin := thoughtboxBinary(t)
	data := t.TempDir()
	env := append(os.Environ(), "THOUGHTBOX_DATA_DIR="+data, "DISABLE_THOUGHT_LOGGING=1")
	start := exec.Command(bin, "start", "bound")
	start.Env = env
	out, err := start.Output()
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	id := strings.TrimSpace(string(out))
	add := exec.Command(bin, "add", id, "first")
	add.Env = env
	if out, err := add.CombinedOutput(); err != nil {
		t.Fatalf("add: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"serve", "--transport", "stdio", "--session", id[:8]}, {"serve", "--transport", "stdio"}} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(env, "THOUGHTBOX_REASONING_SESSION_ID="+id)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			cancel()
			t.Fatalf("%v: connect: %v", args, err)
		}
		var st struct {
			Stage     int    `json:"stage"`
			SessionID string `json:"sessionId"`
		}
		if err := json.Unmarshal([]byte(callGateway(t, s, "get_state", map[string]any{}).text), &st); err != nil || st.Stage != 1 || st.SessionID != id {
			t.Errorf("%v: get_state = %+v, want stage 1 in session %s", args, st, id)
		}
		callGateway(t, s, "cipher", map[string]any{})
		r := callGateway(t, s, "thought", map[string]any{"thought": "more", "nextThoughtNeeded": true})
		if r.isError || !strings.Contains(r.text, `"sessionId":"`+id+`"`) {
			t.Errorf("%v: thought = %s", args, r.text)
		}
		s.Close()
		cancel()
	}
}
