package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestWhyOfACommitMadeWhileAnAgentReasons is the whole loop of a ledger
// kept with the code: `thoughtbox enable` and `hooks install` in a real
// repository, an agent's MCP client recording a session through
// `thoughtbox mcp` started in the worktree, and meanwhile a person editing
// lib.go and running plain `git commit` — no trailer typed: the
// prepare-commit-msg hook adds it from the active-session file the server
// keeps. Then the gateway's why on that commit, the CLI's, and the
// Observatory started in the worktree return that session: its
// conclusion, the thought about lib.go, what was tried.
func TestWhyOfACommitMadeWhileAnAgentReasons(t *testing.T) {
	bin := thoughtboxBinary(t)
	repo := newCodeRepo(t)
	env := []string{"THOUGHTBOX_DATA_DIR=" + t.TempDir(), "DISABLE_THOUGHT_LOGGING=1"}
	runIn(t, repo, env, bin, "enable")
	runIn(t, repo, env, bin, "hooks", "install")

	s := stdioIn(t, bin, repo, agent("coding-agent", "1"), env...)
	ok(t, s, "start_new", map[string]any{"sessionTitle": "Make Fetch survive a flaky server"})
	if r := callGateway(t, s, "cipher", map[string]any{}); r.isError {
		t.Fatalf("cipher: %s", r.text)
	}
	th := ok(t, s, "thought", map[string]any{"thought": "Fetch in lib.go gives up on the first error.", "nextThoughtNeeded": true,
		"code": []map[string]any{{"path": "lib.go", "from": 3}}})
	id := th["sessionId"].(string)
	ok(t, s, "thought", map[string]any{"thought": "Retrying at once hammers a server that is already down.", "nextThoughtNeeded": true,
		"branchId": "retry-at-once", "branchFromThought": 1})

	// The person commits while the agent is still reasoning.
	writeFile(t, filepath.Join(repo, "lib.go"), "package lib\n\n// Fetch retries with exponential backoff.\nfunc Fetch() { retry(fetchOnce) }\n")
	runIn(t, repo, nil, "git", "commit", "-q", "-am", "Fetch retries with backoff")
	commit := runIn(t, repo, nil, "git", "rev-parse", "HEAD")
	if trailer := runIn(t, repo, nil, "git", "log", "-1", "--format=%(trailers:key=Thoughtbox-Session,valueonly)"); trailer != id {
		t.Fatalf("the commit's Thoughtbox-Session trailer is %q, want %s (written by the hook from the active session)", trailer, id)
	}
	ok(t, s, "thought", map[string]any{"thought": "Retry with exponential backoff and jitter, at most five times.", "nextThoughtNeeded": false})

	check := func(who string, raw []byte) {
		t.Helper()
		var ans struct {
			Commits []struct {
				Commit   string
				Sessions []struct {
					SessionID  string
					Conclusion struct{ Thought string }
					Touching   []struct{ Thought string }
					Branches   []struct{ BranchID string }
				}
			}
		}
		if err := json.Unmarshal(raw, &ans); err != nil {
			t.Fatalf("%s: %v\n%s", who, err, raw)
		}
		if len(ans.Commits) != 1 || ans.Commits[0].Commit != commit || len(ans.Commits[0].Sessions) != 1 {
			t.Fatalf("%s: %s", who, raw)
		}
		ss := ans.Commits[0].Sessions[0]
		if ss.SessionID != id || !strings.Contains(ss.Conclusion.Thought, "exponential backoff and jitter") ||
			len(ss.Touching) != 1 || !strings.Contains(ss.Touching[0].Thought, "gives up on the first error") ||
			len(ss.Branches) != 1 || ss.Branches[0].BranchID != "retry-at-once" {
			t.Errorf("%s: %s", who, raw)
		}
	}
	r := callGateway(t, s, "why", map[string]any{"commit": "HEAD"})
	if r.isError {
		t.Fatalf("why: %s", r.text)
	}
	check("the gateway's why", []byte(r.text))
	s.Close()
	check("thoughtbox why", []byte(runIn(t, repo, env, bin, "why", "HEAD", "--format", "json")))

	// The Observatory started in the worktree shows the same commit's
	// reasoning, and the commit among the session's links.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	obs := exec.CommandContext(ctx, bin, "observatory")
	obs.Dir = repo
	obs.Env = append(append(os.Environ(), gitEnv...), append(env, "THOUGHTBOX_OBSERVATORY_PORT=0", "HOST=127.0.0.1")...)
	addr := startAnnounced(t, obs, time.Minute, regexp.MustCompile(`Observatory at http://(\S+?)/`))[0]
	get := func(path string) []byte {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s\n%s", path, resp.Status, body)
		}
		return body
	}
	check("the Observatory's commit page", get("/ui/code/commit/"+commit))
	if linked := string(get("/ui/code/session/" + id)); !strings.Contains(linked, `"commit":"`+commit+`"`) {
		t.Errorf("the session's linked commits: %s", linked)
	}
}
