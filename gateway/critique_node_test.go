package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCritiqueFromTypeScriptSDK drives critique from a client in another
// language: testdata/critique_client.mjs, on the TypeScript MCP SDK
// (installed with npm into a temporary directory), launches
// `thoughtbox serve --transport stdio` and answers its sampling request
// with a scripted model. The critique must come back in the reply and be
// a commit by that model in the project's Git repository.
func TestCritiqueFromTypeScriptSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("installs the TypeScript MCP SDK with npm and builds the server")
	}
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		t.Skip("node and npm are needed to run the TypeScript MCP SDK client (testdata/critique_client.mjs); install Node.js 18+ to run this test")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	// The script is run from where the SDK is installed, because ES
	// modules resolve packages from the importing file's directory.
	dir := t.TempDir()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix", dir, "@modelcontextprotocol/sdk@1")
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("npm install @modelcontextprotocol/sdk failed (is the npm registry reachable?): %v\n%s", err, out)
	}
	script, err := os.ReadFile(filepath.Join("testdata", "critique_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "critique_client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "thoughtbox")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../cmd/thoughtbox").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/thoughtbox: %v\n%s", err, out)
	}

	data := t.TempDir()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "critique_client.mjs"), bin, "serve", "--transport", "stdio")
	cmd.Env = append(os.Environ(), "THOUGHTBOX_DATA_DIR="+data, "THOUGHTBOX_STORAGE=fs")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	var got struct {
		ServerName string `json:"serverName"`
		Reply      struct {
			SessionID     string `json:"sessionId"`
			ThoughtNumber int    `json:"thoughtNumber"`
			Critique      *struct {
				Text, Model, Timestamp string
			} `json:"critique"`
			CritiqueError any `json:"critiqueError"`
		} `json:"reply"`
		SamplingRequests []struct {
			SystemPrompt     string `json:"systemPrompt"`
			IncludeContext   string `json:"includeContext"`
			MaxTokens        int    `json:"maxTokens"`
			ModelPreferences struct {
				Hints                []struct{ Name string }
				IntelligencePriority float64
				CostPriority         float64
			} `json:"modelPreferences"`
			Messages []struct {
				Role    string
				Content struct{ Type, Text string }
			} `json:"messages"`
		} `json:"samplingRequests"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node client output is not JSON: %v\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	const critic = "ts-scripted-critic"
	r := got.Reply
	if got.ServerName != "thoughtbox" || r.ThoughtNumber != 2 || r.CritiqueError != nil {
		t.Fatalf("reply = %+v (server %q)", r, got.ServerName)
	}
	if r.Critique == nil || r.Critique.Model != critic || !strings.HasPrefix(r.Critique.Text, "The conclusion rests on one benchmark run") {
		t.Fatalf("critique = %+v", r.Critique)
	}
	if len(got.SamplingRequests) != 1 {
		t.Fatalf("%d sampling requests reached the TypeScript client", len(got.SamplingRequests))
	}
	sr := got.SamplingRequests[0]
	mp := sr.ModelPreferences
	if sr.IncludeContext != "thisServer" || sr.MaxTokens != 1000 || len(mp.Hints) != 1 || mp.Hints[0].Name != "claude-sonnet-4-5-20250929" ||
		mp.IntelligencePriority != 0.9 || mp.CostPriority != 0.3 || !strings.Contains(sr.SystemPrompt, "Unstated assumptions") {
		t.Errorf("sampling request = %+v", sr)
	}
	if len(sr.Messages) != 1 || !strings.Contains(sr.Messages[0].Content.Text, "12% of write throughput") || !strings.Contains(sr.Messages[0].Content.Text, "Drop the index") {
		t.Errorf("sampling messages = %+v", sr.Messages)
	}

	// The critique is the newest commit of the session, by the model.
	if _, err := exec.LookPath("git"); err != nil {
		t.Log("git CLI not installed; not reading the ledger with git")
		return
	}
	repo := filepath.Join(data, "projects", "_default.git")
	log, err := exec.Command("git", "--git-dir", repo, "log", "-2", "--format=%an|%s", "sessions/"+r.SessionID+"/main").CombinedOutput()
	if err != nil {
		t.Fatalf("git log: %v\n%s", err, log)
	}
	want := critic + "|Critique of thought 2 by " + critic + "\n" +
		"ts-sdk-agent 0.9.0|Thought 2: S2|C|S1|Drop the index: reads barely changed in the benchmark\n"
	if string(log) != want {
		t.Errorf("git log:\n%s\nwant:\n%s", log, want)
	}
}
