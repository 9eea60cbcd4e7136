package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestObservatoryTokensFile runs the Observatory beside `serve`, and the
// standalone `thoughtbox observatory`, with THOUGHTBOX_AUTH_TOKENS_FILE and
// no single token: a token that may read the served project reads the API
// and opens the socket, one in the file without that project is refused
// with 403, one not in the file (or none) with 401.
func TestObservatoryTokensFile(t *testing.T) {
	t.Parallel()
	bin := thoughtboxBinary(t)
	tokensFile := filepath.Join(t.TempDir(), "tokens")
	const reader, outsider = "reader-token-0123456789", "outsider-token-0123456"
	if err := os.WriteFile(tokensFile, []byte(reader+" rita read:alpha\n"+outsider+" otto write:beta\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"serve"}, {"observatory", "--port", "0"}} {
		t.Run(args[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			data := t.TempDir()
			// The standalone Observatory shows an existing project.
			start := exec.Command(bin, "start", "visible")
			start.Env = append(os.Environ(), "THOUGHTBOX_DATA_DIR="+data, "THOUGHTBOX_PROJECT=alpha")
			if out, err := start.CombinedOutput(); err != nil {
				t.Fatalf("start: %v\n%s", err, out)
			}
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Env = append(os.Environ(), "THOUGHTBOX_DATA_DIR="+data, "THOUGHTBOX_PROJECT=alpha",
				"PORT=0", "HOST=127.0.0.1", "THOUGHTBOX_AUTH_TOKEN=", "THOUGHTBOX_AUTH_TOKENS_FILE="+tokensFile,
				"DISABLE_THOUGHT_LOGGING=1", "THOUGHTBOX_OBSERVATORY_ENABLED=true",
				"THOUGHTBOX_OBSERVATORY_PORT=0", "THOUGHTBOX_OBSERVATORY_HTTP_API=true")
			cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
			defer func() { cancel(); cmd.Wait() }()
			addr := startAnnounced(t, cmd, 60*time.Second, regexp.MustCompile(`Observatory at http://(\S+?)/`))[0]
			for _, tc := range []struct {
				token  string
				status int
			}{{reader, http.StatusOK}, {outsider, http.StatusForbidden}, {"unknown-token-0123456789", http.StatusUnauthorized}, {"", http.StatusUnauthorized}} {
				h := http.Header{}
				if tc.token != "" {
					h.Set("Authorization", "Bearer "+tc.token)
				}
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/api/sessions", nil)
				req.Header = h
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status || (tc.status == http.StatusOK && !strings.Contains(string(body), "visible")) {
					t.Errorf("API with token %q: %d %s, want %d", tc.token, resp.StatusCode, body, tc.status)
				}
				ws, resp, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ws", h)
				switch {
				case tc.status == http.StatusOK && err != nil:
					t.Errorf("socket with token %q: %v", tc.token, err)
				case tc.status != http.StatusOK && (resp == nil || resp.StatusCode != tc.status):
					t.Errorf("socket with token %q: %v, want %d", tc.token, err, tc.status)
				}
				if ws != nil {
					ws.Close()
				}
			}
		})
	}
}
