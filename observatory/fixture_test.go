package observatory_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/internal/testfixture"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/observatory"
)

// TestSmallLedgerOverHTTP serves the shared small ledger (testdata/ledger)
// through the HTTP API: the listing has both sessions, and a snapshot has
// the session's status, its branch, its revision and its closing thought.
func TestSmallLedgerOverHTTP(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "p.git")
	testfixture.SmallLedger(t, dir)
	store, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	obs := observatory.New(ledger.New(store, ledger.Options{}), observatory.Config{HTTPAPI: true})
	srv := serve(t, obs)
	defer srv.Close()
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s\n%s", path, resp.Status, body)
		}
		return string(body)
	}
	list := get("/api/sessions")
	for _, title := range []string{"Why the cache misses", "Naming the release"} {
		if !strings.Contains(list, title) {
			t.Errorf("/api/sessions lacks %q:\n%s", title, list)
		}
	}
	snap := get("/api/sessions/" + testfixture.CacheSession)
	for _, want := range []string{`"status":"completed"`, `"fromThoughtNumber":3`, `"revisesNode":"` + testfixture.CacheSession + `:2"`, "Quarantine the warmup job"} {
		if !strings.Contains(snap, want) {
			t.Errorf("the snapshot of %s lacks %s:\n%.2000s", testfixture.CacheSession, want, snap)
		}
	}
}
