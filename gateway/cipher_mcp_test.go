package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestCipherOverMCP plays seed 004's cipher through a real MCP client:
// confidence markers are kept on the stored thought, "S2|R|^S1|…" is
// recorded as a revision of thought 1, an explicit isRevision: false that
// contradicts the line is refused with a hint, and the cipher export of a
// plain-text thought invents neither a type nor a reference.
func TestCipherOverMCP(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	id := c.ready("cipher over MCP")

	c.think("S1|H||the cache is stale (conf 0.7)", nil)
	r := c.think("S2|R|^S1|not the cache: the database (confidence high)", nil)
	if num(r["thoughtNumber"]) != 2 {
		t.Fatalf("revision reply: %v", r)
	}

	// The contradiction: the line revises S1, the call says it does not.
	body := c.fail("thought", map[string]any{"thought": "S3|R|^S1|the database after all", "nextThoughtNeeded": true, "isRevision": false}, ledger.CodeInvalidPayload)
	d := body["details"].(map[string]any)
	if d["field"] != "isRevision" || num(d["cipherRevises"]) != 1 || !strings.Contains(body["message"].(string), "leave isRevision out") {
		t.Fatalf("contradicting isRevision: %v", body)
	}
	// Nothing was stored by the refusal; a plain-text thought follows.
	c.think("Plain words: check the connection pool next", nil)

	v, err := e.l.View(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if v.Session.ThoughtCount != 3 {
		t.Fatalf("session holds %d thoughts, want 3", v.Session.ThoughtCount)
	}
	first, _ := v.Graph.Thought(1)
	if first.Cipher == nil || first.Cipher.Confidence == nil || first.Cipher.Confidence.Value == nil || *first.Cipher.Confidence.Value != 0.7 {
		t.Fatalf("thought 1 cipher = %+v, want confidence 0.7 kept", first.Cipher)
	}
	second, _ := v.Graph.Thought(2)
	if !second.Data.IsRevision || second.Data.RevisesThought == nil || *second.Data.RevisesThought != 1 || second.RevisesNode != first.ID {
		t.Fatalf("thought 2 = %+v (revises node %q), want a revision of thought 1 (%s)", second.Data, second.RevisesNode, first.ID)
	}
	if second.Cipher == nil || second.Cipher.Confidence == nil || second.Cipher.Confidence.Level != "high" {
		t.Fatalf("thought 2 cipher = %+v, want confidence high kept", second.Cipher)
	}

	// What an agent reads back carries them too: the revision in
	// read_thoughts, the parsed line (confidence included) in the
	// references resource.
	rt := c.ok("read_thoughts", map[string]any{"thoughtNumber": 2})
	if th := list(rt["thoughts"]); len(th) != 1 || th[0].(map[string]any)["isRevision"] != true || num(th[0].(map[string]any)["revisesThought"]) != 1 {
		t.Errorf("read_thoughts of 2: %v", rt)
	}
	for n, want := range map[string][]string{
		"1": {`"marker":"(conf 0.7)"`, `"value":0.7`, `"type":"H"`},
		"2": {`"marker":"(confidence high)"`, `"level":"high"`, `"type":"R"`},
	} {
		refs := jsonText(t, c.readJSON("thoughtbox://references/"+id+"/"+n))
		for _, w := range want {
			if !strings.Contains(refs, w) {
				t.Errorf("references of thought %s lack %s: %s", n, w, refs)
			}
		}
	}

	// The cipher export: the cipher lines as written, the plain thought
	// without an invented type or reference.
	ex := c.gw("session", map[string]any{"subOperation": "export", "format": "cipher"})
	if ex.isError {
		t.Fatalf("cipher export: %v", ex.texts)
	}
	out := strings.Join(ex.texts, "\n")
	if !strings.Contains(out, "S2|R|^S1|not the cache: the database (confidence high)") {
		t.Errorf("cipher export lost the revision line:\n%s", out)
	}
	var plain string
	for _, line := range strings.Split(strings.ReplaceAll(out, `\n`, "\n"), "\n") {
		if strings.Contains(line, "Plain words") {
			plain = line
		}
	}
	if plain == "" {
		t.Fatalf("cipher export lacks the plain thought:\n%s", out)
	}
	for _, invented := range []string{"|H|", "|E|", "|C|", "|O|", "|R|", "S2|", "S1,"} {
		if strings.Contains(plain, invented) {
			t.Errorf("the plain thought's export line %q invents %q", plain, invented)
		}
	}
	t.Logf("plain line: %s", plain)
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
