package observatory_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/observatory"
)

// apiGet fetches path from an Observatory and decodes its JSON body.
func apiGet(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("GET %s: Content-Type %q, body %s; want JSON", url, ct, b)
	}
	var body map[string]any
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, b)
	}
	return resp.StatusCode, body
}

// TestAPIOffNamesTheSetting: with the HTTP API off, /api/… answers a JSON
// error that names the setting and the flag that turn it on, not a bare
// "404 page not found".
func TestAPIOffNamesTheSetting(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	id := f.start("hidden")
	for _, path := range []string{"/api/sessions", "/api/sessions/" + id, "/api/sessions/" + id + "/export"} {
		status, body := apiGet(t, f.srv.URL+path)
		if status != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, status)
		}
		msg, _ := body["message"].(string)
		if !strings.Contains(msg, config.EnvObservatoryHTTPAPI) || !strings.Contains(msg, "--http-api") {
			t.Errorf("GET %s: message %q does not name %s and --http-api", path, msg, config.EnvObservatoryHTTPAPI)
		}
		details, _ := body["details"].(map[string]any)
		if details["setting"] != config.EnvObservatoryHTTPAPI {
			t.Errorf("GET %s: details %v, want setting %s", path, details, config.EnvObservatoryHTTPAPI)
		}
	}
}

// TestAPIIDPrefixes: the API takes a session id as the CLI does: a unique
// prefix names the session, in any case; an ambiguous one is refused (400)
// with the candidates; one that matches nothing is a 404.
func TestAPIIDPrefixes(t *testing.T) {
	ids := []string{"abcd1234-0000-4000-8000-000000000001", "abcd5678-0000-4000-8000-000000000002"}
	next := 0
	store, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(store, ledger.Options{NewID: func() string { next++; return ids[next-1] }})
	obs := observatory.New(l, observatory.Config{HTTPAPI: true, Authors: store})
	srv := serve(t, obs)
	t.Cleanup(func() { obs.Close(); srv.Close(); store.Close() })
	ctx := context.Background()
	for i, title := range []string{"first", "second"} {
		if _, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: title}, agent); err != nil {
			t.Fatal(err)
		}
		if _, err := l.AddThought(ctx, ids[i], ledger.ThoughtInput{Thought: "a thought of " + title, NextThoughtNeeded: true}, agent); err != nil {
			t.Fatal(err)
		}
	}

	for _, path := range []string{"/api/sessions/abcd5", "/api/sessions/ABCD5678", "/api/sessions/abcd5/analysis"} {
		status, body := apiGet(t, srv.URL+path)
		if status != http.StatusOK {
			t.Errorf("GET %s: %d %v, want 200", path, status, body)
		}
	}
	_, snap := apiGet(t, srv.URL+"/api/sessions/abcd5")
	if s, _ := snap["session"].(map[string]any); s["id"] != ids[1] {
		t.Errorf("GET /api/sessions/abcd5: session %v, want %s", snap["session"], ids[1])
	}
	resp, err := http.Get(srv.URL + "/api/sessions/abcd1/export?format=markdown")
	if err != nil {
		t.Fatal(err)
	}
	md, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(md), "a thought of first") {
		t.Errorf("export by prefix: %d %s", resp.StatusCode, md)
	}

	status, body := apiGet(t, srv.URL+"/api/sessions/abcd")
	if status != http.StatusBadRequest || body["code"] != string(ledger.CodeInvalidPayload) {
		t.Errorf("ambiguous prefix: %d %v, want 400 INVALID_PAYLOAD", status, body)
	}
	details, _ := body["details"].(map[string]any)
	var got []string
	for _, c := range details["candidates"].([]any) {
		got = append(got, c.(string))
	}
	if diff := cmp.Diff(ids, got); diff != "" {
		t.Errorf("ambiguous prefix: candidates (-want +got):\n%s", diff)
	}
	if status, body := apiGet(t, srv.URL+"/api/sessions/ffff"); status != http.StatusNotFound || body["code"] != string(ledger.CodeSessionNotFound) {
		t.Errorf("unknown prefix: %d %v, want 404 SESSION_NOT_FOUND", status, body)
	}
}
