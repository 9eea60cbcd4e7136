package gateway_test

import (
	"context"
	"os/exec"
	"slices"
	"testing"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestSessionUpdatePrivate marks a session private and back through a
// real MCP client: the mark lands in the code repository's local list
// (what push reads), makes no commit, and a standalone project or a
// wrongly typed value is refused naming the field.
func TestSessionUpdatePrivate(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	repo, err := coderepo.Find(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, gateway.Options{CodeRepo: func(string) *coderepo.Repo { return repo }})
	c := e.connect(t, clientOpts{})
	id := c.ready("Secret reasoning")
	c.think("a thought", nil)

	r := c.ok("session", map[string]any{"operation": "update", "private": true})
	if r["private"] != true || !contains(r["message"].(string), "no push sends it") {
		t.Fatalf("reply %v", r)
	}
	if s, _ := r["session"].(map[string]any); s == nil || s["id"] != id {
		t.Fatalf("session %v, want %s", r["session"], id)
	}
	if got, err := repo.PrivateSessions(); err != nil || !slices.Equal(got, []string{id}) {
		t.Fatalf("private list %v, %v; want [%s]", got, err, id)
	}
	c.ok("session", map[string]any{"operation": "update", "sessionId": id, "private": false, "title": "Open reasoning"})
	if got, _ := repo.PrivateSessions(); len(got) != 0 {
		t.Fatalf("private list %v after private:false", got)
	}

	body := c.fail("session", map[string]any{"operation": "update", "private": "yes"}, ledger.CodeInvalidPayload)
	if msg, _ := body["message"].(string); !contains(msg, "private") {
		t.Errorf("message %q", msg)
	}

	plain := newEnv(t, gateway.Options{})
	pc := plain.connect(t, clientOpts{})
	pc.ready("Standalone")
	body = pc.fail("session", map[string]any{"operation": "update", "private": true}, ledger.CodeInvalidPayload)
	if msg, _ := body["message"].(string); !contains(msg, "private") || !contains(msg, "code repository") {
		t.Errorf("message %q", msg)
	}
}
