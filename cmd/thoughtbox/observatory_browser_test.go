package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var screenshots = flag.Bool("screenshots", false, "save the Observatory browser test's screenshots to testdata/observatory (for the README) instead of a temporary directory")

// domDeadline bounds how long one committed thought may take to show in
// the page: a functional bound (the page follows the ledger live) that
// holds on a loaded two-core CI, where the slowest of ten thoughts took
// 1.6 s at load average 27. The 500 ms is asserted on the median
// over the thoughts (medianTarget), which one slow moment cannot move;
// the test logs the median and the slowest.
const (
	domDeadline  = 5 * time.Second
	medianTarget = 500 * time.Millisecond
)

// observedServer is a `thoughtbox serve` with the Observatory enabled.
type observedServer struct {
	cmd      *exec.Cmd
	cancel   context.CancelFunc
	mcpURL   string
	obsURL   string
	obsPort  string
	stderrTx chan string
}

func startObservedServer(t *testing.T, bin, data, obsPort string) *observedServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve")
	cmd.Env = append(os.Environ(), "THOUGHTBOX_DATA_DIR="+data, "PORT=0", "HOST=127.0.0.1",
		"THOUGHTBOX_AUTH_TOKEN=s3cret", "DISABLE_THOUGHT_LOGGING=1", "THOUGHTBOX_AGENT_NAME=browser-test-agent",
		"THOUGHTBOX_OBSERVATORY_ENABLED=true", "THOUGHTBOX_OBSERVATORY_PORT="+obsPort, "THOUGHTBOX_OBSERVATORY_HTTP_API=true")
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	s := &observedServer{cmd: cmd, cancel: cancel}
	urls := startAnnounced(t, cmd, 30*time.Second,
		regexp.MustCompile(`listening on (http://\S+/mcp)`),
		regexp.MustCompile(`Observatory at (http://\S+?:\d+)/`))
	s.mcpURL, s.obsURL = urls[0], urls[1]
	_, s.obsPort, _ = net.SplitHostPort(strings.TrimPrefix(s.obsURL, "http://"))
	return s
}

func (s *observedServer) stop() {
	s.cancel()
	s.cmd.Wait()
}

func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestObservatoryInBrowser drives the Observatory's page in headless
// Chromium while an MCP client records thoughts, a branch, a revision and
// a critique through `thoughtbox serve`; each thought must appear in the
// page's DOM within domDeadline. The server is then restarted, and the
// page must reconnect and show the session again from a fresh snapshot.
func TestObservatoryInBrowser(t *testing.T) {
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("Chromium is not installed (apt-get install chromium); skipping the Observatory browser test")
	}
	bin := thoughtboxBinary(t)
	data := t.TempDir()
	shots := t.TempDir()
	if *screenshots {
		shots = filepath.Join("..", "..", "testdata", "observatory")
		os.MkdirAll(shots, 0o755)
	}
	srv := startObservedServer(t, bin, data, "0")
	defer func() { srv.stop() }()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.WindowSize(1280, 800))
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	run := func(what string, actions ...chromedp.Action) {
		t.Helper()
		if err := chromedp.Run(browser, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// within waits for sel to be in the DOM, at most domDeadline.
	within := func(what, sel string) time.Duration {
		t.Helper()
		start := time.Now()
		wctx, cancel := context.WithTimeout(browser, domDeadline)
		defer cancel()
		if err := chromedp.Run(wctx, chromedp.WaitReady(sel, chromedp.ByQuery)); err != nil {
			t.Fatalf("%s: %s not in the page within %v: %v", what, sel, domDeadline, err)
		}
		return time.Since(start)
	}

	run("open the page", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(srv.obsURL+"/?token=s3cret"),
		chromedp.WaitReady(`#conn.open`, chromedp.ByQuery))

	client := mcp.NewClient(&mcp.Implementation{Name: "observatory-browser-test", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "scripted-critic-1", Role: "assistant",
				Content: &mcp.TextContent{Text: "The hit rate is assumed, not measured: check it under real traffic first."}}, nil
		},
	})
	connect := func(url string) *mcp.ClientSession {
		t.Helper()
		s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{"s3cret"}}}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		return s
	}
	mcpSession := connect(srv.mcpURL)
	defer func() { mcpSession.Close() }()

	start := callGateway(t, mcpSession, "start_new", map[string]any{"sessionTitle": "Caching the profile service", "tags": []string{"perf", "caching"}})
	if start.isError {
		t.Fatalf("start_new: %s", start.text)
	}
	var started struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal([]byte(start.text), &started)
	if started.SessionID == "" {
		t.Fatalf("start_new gave no sessionId: %s", start.text)
	}
	sid := started.SessionID
	within("the new session in the live list", fmt.Sprintf(`#live [data-session-id=%q]`, sid))
	run("open the session", chromedp.Click(fmt.Sprintf(`#live [data-session-id=%q]`, sid), chromedp.ByQuery),
		chromedp.WaitReady(`#session-head h2`, chromedp.ByQuery))
	callGateway(t, mcpSession, "cipher", map[string]any{})

	steps := []struct {
		args map[string]any
		node string // node id suffix after the session id
		sel  string // extra selector that must appear
	}{
		{map[string]any{"thought": "S1|O|Profile reads have a p99 of 480 ms since the mobile launch.", "nextThoughtNeeded": true}, "1", ""},
		{map[string]any{"thought": "S2|H|S1|Most reads hit the same few users.", "nextThoughtNeeded": true}, "2", ""},
		{map[string]any{"thought": "S3|E|S2|Access log: 2% of user ids take 61% of the reads.", "nextThoughtNeeded": true}, "3", ""},
		{map[string]any{"thought": "S4|H|S3|A shared Redis in front of the database.", "nextThoughtNeeded": true, "branchId": "redis", "branchFromThought": 3}, "redis:4", ".edge.branch"},
		{map[string]any{"thought": "S5|E|S4|Redis adds a network hop and an on-call rota.", "nextThoughtNeeded": true, "branchId": "redis", "branchFromThought": 3}, "redis:5", ""},
		{map[string]any{"thought": "S4|R|^S2|Reads are skewed, and profile writes are rare: minutes of staleness are fine.", "nextThoughtNeeded": true, "isRevision": true, "revisesThought": 2}, "4", ".node.revision"},
		{map[string]any{"thought": "S5|H|S3,S4|An in-process LRU of 50,000 profiles per instance.", "nextThoughtNeeded": true}, "5", ""},
		{map[string]any{"thought": "S6|E|S5|Load test: p99 falls to 95 ms with a 93% hit rate.", "nextThoughtNeeded": true, "critique": true}, "6", ""},
		{map[string]any{"thought": "S7|C|S6|Ship the LRU behind a flag; revisit Redis if instances exceed 40.", "nextThoughtNeeded": true}, "7", ""},
		{map[string]any{"thought": "S8|A|S7|Roll out to 10% on Monday, watch p99 and memory.", "nextThoughtNeeded": false}, "8", ""},
	}
	// Each thought's latency runs from the gateway's reply (the thought
	// is committed by then) to its node in the DOM; from the call's start
	// it also counts the MCP round trip and the commit.
	var latencies, fromCall []time.Duration
	for _, st := range steps {
		t0 := time.Now()
		r := callGateway(t, mcpSession, "thought", st.args)
		if r.isError {
			t.Fatalf("thought %v: %s", st.args["thought"], r.text)
		}
		replied := time.Now()
		within("thought "+st.node, fmt.Sprintf(`#graph [data-node-id=%q]`, sid+":"+st.node))
		if st.sel != "" {
			within("thought "+st.node, "#graph "+st.sel)
		}
		latencies = append(latencies, time.Since(replied))
		fromCall = append(fromCall, time.Since(t0))
	}
	med, slowest := medianMax(latencies)
	medCall, slowestCall := medianMax(fromCall)
	t.Logf("thought in the DOM after its reply: median %v, slowest %v, all %v (from the call's start: median %v, slowest %v)",
		med, slowest, latencies, medCall, slowestCall)
	if med > medianTarget {
		t.Errorf("median latency from reply to DOM is %v over %d thoughts, want under %v (all: %v)", med, len(latencies), medianTarget, latencies)
	}
	run("the session shows as completed", chromedp.WaitReady(`#session-head .status.completed`, chromedp.ByQuery))

	// The critique is committed after its thought; a fresh snapshot (the
	// session opened again) shows it on the thought.
	run("reopen", chromedp.Click(fmt.Sprintf(`[data-session-id=%q]`, sid), chromedp.ByQuery))
	within("the critique marker", fmt.Sprintf(`[data-node-id=%q] circle.crit`, sid+":6"))

	// The detail panel names the commit and its author.
	var detail string
	run("select thought 2", chromedp.Click(fmt.Sprintf(`[data-node-id=%q]`, sid+":2"), chromedp.ByQuery),
		chromedp.Poll(`document.querySelector("#detail").textContent.includes("browser-test-agent")`, nil, chromedp.WithPollingTimeout(5*time.Second)),
		chromedp.Text(`#detail`, &detail, chromedp.ByQuery))
	if !regexp.MustCompile(`commit\s*[0-9a-f]{40}`).MatchString(detail) {
		t.Errorf("detail panel lacks the commit id: %q", detail)
	}
	// Keyboard: the focused thought moves with the arrow keys.
	run("keyboard", chromedp.Focus(fmt.Sprintf(`[data-node-id=%q]`, sid+":6"), chromedp.ByQuery),
		chromedp.KeyEvent("\r"),
		chromedp.Poll(`document.querySelector("#detail h3").textContent.startsWith("Thought 6") &&
			document.querySelector("#detail").textContent.includes("browser-test-agent")`, nil, chromedp.WithPollingTimeout(5*time.Second)))

	var png []byte
	run("screenshot 1280x800", chromedp.CaptureScreenshot(&png))
	os.WriteFile(filepath.Join(shots, "observatory-1280x800.png"), png, 0o644)
	run("narrow window", chromedp.EmulateViewport(420, 900), chromedp.Sleep(300*time.Millisecond), chromedp.CaptureScreenshot(&png))
	os.WriteFile(filepath.Join(shots, "observatory-420.png"), png, 0o644)
	var overflow bool
	run("no sideways scrolling when narrow", chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow))
	if overflow {
		t.Error("at 420 px wide the page scrolls sideways")
	}
	run("back to 1280", chromedp.EmulateViewport(1280, 800))

	// Restart the server on the same Observatory port: the page reconnects
	// and resumes from a fresh snapshot, including thoughts written while
	// it was away.
	mcpSession.Close()
	port := srv.obsPort
	srv.stop()
	run("the page notices", chromedp.WaitReady(`#conn.lost`, chromedp.ByQuery))
	srv = startObservedServer(t, bin, data, port)
	mcpSession = connect(srv.mcpURL)
	for _, op := range []struct {
		name string
		args map[string]any
	}{
		{"load_context", map[string]any{"sessionId": sid}},
		{"cipher", map[string]any{}},
		{"thought", map[string]any{"thought": "S9|O|After the restart: the rollout went fine.", "nextThoughtNeeded": false}},
	} {
		if r := callGateway(t, mcpSession, op.name, op.args); r.isError {
			t.Fatalf("%s after the restart: %s", op.name, r.text)
		}
	}
	run("reconnected", chromedp.WaitReady(`#conn.open`, chromedp.ByQuery),
		chromedp.WaitReady(fmt.Sprintf(`[data-node-id=%q]`, sid+":1"), chromedp.ByQuery),
		chromedp.WaitReady(fmt.Sprintf(`[data-node-id=%q]`, sid+":9"), chromedp.ByQuery))
}

// medianMax returns the median (the upper one of an even count) and the
// largest of ds.
func medianMax(ds []time.Duration) (time.Duration, time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}
