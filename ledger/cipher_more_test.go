package ledger_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/ledger"
)

func TestCipherConfidence(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		line string
		want *ledger.CipherConfidence
	}{
		{"S1|H|cache is stale (conf 0.7)", &ledger.CipherConfidence{Value: f(0.7), Marker: "(conf 0.7)"}},
		{"S1|H|cache is stale (CONF: 70%) maybe", &ledger.CipherConfidence{Value: f(0.7), Marker: "(CONF: 70%)"}},
		{"S1|H|S0x|(confidence high) it is the cache", &ledger.CipherConfidence{Level: "high", Marker: "(confidence high)"}},
		{"S1|C|S1|(conf 2) too much, then (conf low)", &ledger.CipherConfidence{Level: "low", Marker: "(conf low)"}},
		{"S1|H|no marker (config 0.5) (conf) (conf 1e-1) (conference)", nil},
		{"S1|H|(conf 150%)", nil},
	} {
		info, ok := ledger.ParseCipher(tc.line)
		if !ok {
			t.Fatalf("%q is not cipher", tc.line)
		}
		if diff := cmp.Diff(tc.want, info.Confidence); diff != "" {
			t.Errorf("%q: confidence (-want +got):\n%s", tc.line, diff)
		}
	}
	// Kept on the node.
	e := setup(t)
	id := e.start(t)
	e.add(t, id, th("S1|H||the cache is stale (conf 0.4)"))
	n, _ := e.view(t, id).Graph.Thought(1)
	if n.Cipher == nil || n.Cipher.Confidence == nil || *n.Cipher.Confidence.Value != 0.4 {
		t.Fatalf("node cipher = %+v, want confidence 0.4 kept", n.Cipher)
	}
}

// TestCipherRevision: "S3|R|^S1|…" is a revision of thought 1 without
// isRevision/revisesThought; a revisesThought that names another thought is
// refused with a hint; a missing target names the cipher line.
func TestCipherRevision(t *testing.T) {
	ctx := context.Background()
	e := setup(t)
	id := e.start(t)
	e.add(t, id, th("S1|H||the cache is stale"))
	e.add(t, id, th("S2|E|S1|hit rate unchanged"))
	r := e.add(t, id, th("S3|R|^S1|not the cache: the database"))
	if !r.Thought.IsRevision || r.Thought.RevisesThought == nil || *r.Thought.RevisesThought != 1 {
		t.Fatalf("thought 3 = %+v, want a revision of 1", r.Thought)
	}
	first, _ := e.view(t, id).Graph.Thought(1)
	if r.Node.RevisesNode != first.ID {
		t.Fatalf("revisesNode = %q, want %q", r.Node.RevisesNode, first.ID)
	}

	// Agreeing fields are fine.
	seven := 2
	in := th("S4|R|^S2|the evidence was misread")
	in.IsRevision, in.RevisesThought = true, &seven
	e.add(t, id, in)

	// A contradiction is refused, naming both.
	one := 1
	in = th("S5|R|^S2|again")
	in.IsRevision, in.RevisesThought = true, &one
	_, err := e.l.AddThought(ctx, id, in, agent)
	le := ledger.AsError(err)
	if le.Code != ledger.CodeInvalidPayload || le.Details["field"] != "revisesThought" || le.Details["cipherRevises"] != 2 {
		t.Fatalf("contradiction: %v, want INVALID_PAYLOAD on revisesThought", err)
	}
	if err := e.l.CheckThought(in); ledger.AsError(err).Details["field"] != "revisesThought" {
		t.Fatalf("CheckThought of a contradiction: %v", err)
	}

	// A target that does not exist is refused, naming the cipher line.
	_, err = e.l.AddThought(ctx, id, th("S5|R|^S40|no such thought"), agent)
	if le := ledger.AsError(err); le.Code != ledger.CodeThoughtNotFound || !strings.Contains(le.Message, "the cipher line's ^S40") {
		t.Fatalf("missing target: %v", err)
	}

	// Several ^ refs do not say which one: plain references, no revision.
	r = e.add(t, id, th("S5|R|^S1,^S2|both were wrong"))
	if r.Thought.IsRevision {
		t.Fatalf("a line with two ^ refs became a revision: %+v", r.Thought)
	}
}
