package observatory

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// FuzzClientMessage feeds arbitrary WebSocket text frames through the
// Observatory's own reading and handling (parseClientMessage, then handle,
// as readLoop does) against a ledger with a session, a branch and a
// revision. Whatever arrives, nothing panics, every reply is a JSON array
// [topic, event, payload], and a frame that is not understood is answered
// with an "error" event carrying one of the seed-002 codes.
func FuzzClientMessage(f *testing.F) {
	for _, s := range []string{
		`["observatory","subscribe"]`,
		`["observatory","list:sessions",{"status":"active","limit":5,"offset":0}]`,
		`["observatory","list:sessions",{"status":"nope","limit":-1}]`,
		`["observatory","list:active"]`,
		`["reasoning:SESSION","subscribe"]`,
		`["reasoning:SESSION","thought:detail",{"thoughtId":"SESSION:1"}]`,
		`["reasoning:SESSION","unsubscribe"]`,
		`["reasoning:nope","subscribe"]`,
		`["x","y","z","w"]`,
		`{"topic":"observatory"}`,
		`[1,2]`,
		`not json`,
		``,
		`[]`,
		`["observatory","list:sessions",{"limit":1e308,"offset":"1"}]`,
	} {
		f.Add(s)
	}
	l, o := relayed(f, func(store *gitstore.Store) Config { return Config{Authors: store, QueueSize: 1 << 16} })
	ctx := context.Background()
	author := ledger.Author{Name: "fuzz"}
	ss, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "fuzzed"}, author)
	if err != nil {
		f.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := l.AddThought(ctx, ss.ID, ledger.ThoughtInput{Thought: "step", NextThoughtNeeded: true}, author); err != nil {
			f.Fatal(err)
		}
	}
	from := 2
	if _, err := l.AddThought(ctx, ss.ID, ledger.ThoughtInput{Thought: "other way", NextThoughtNeeded: true, BranchID: "alt", BranchFromThought: &from}, author); err != nil {
		f.Fatal(err)
	}
	rev := 1
	if _, err := l.AddThought(ctx, ss.ID, ledger.ThoughtInput{Thought: "better", NextThoughtNeeded: true, IsRevision: true, RevisesThought: &rev}, author); err != nil {
		f.Fatal(err)
	}
	// What a client's bad request may be told; a storage or internal
	// error here would be a bug found.
	codes := map[ledger.Code]bool{ledger.CodeInvalidPayload: true, ledger.CodeInvalidOperation: true,
		ledger.CodeSessionNotFound: true, ledger.CodeThoughtNotFound: true}

	f.Fuzz(func(t *testing.T, frame string) {
		// Seeds name the real session.
		data := []byte(strings.ReplaceAll(frame, "SESSION", ss.ID))
		c, err := o.hub.join(0)
		if err != nil {
			t.Skip(err)
		}
		defer o.hub.leave(c)
		m, perr := parseClientMessage(data)
		if perr != nil {
			o.hub.sendError(c, m.topic, perr)
		} else {
			o.handle(ctx, c, m)
		}
		errors := 0
		// Every reply is already queued: handle answers synchronously,
		// and a snapshot is queued before subscribe returns.
		for _, msg := range c.take(nil) {
			var parts []json.RawMessage
			if err := json.Unmarshal(msg, &parts); err != nil || len(parts) != 3 {
				t.Fatalf("reply %q is not [topic, event, payload]", msg)
			}
			var event string
			if json.Unmarshal(parts[1], &event) != nil {
				t.Fatalf("reply %q: event is not a string", msg)
			}
			if event == "error" {
				errors++
				var p ErrorPayload
				if err := json.Unmarshal(parts[2], &p); err != nil || !codes[p.Code] || p.Message == "" {
					t.Fatalf("error reply %q has no known code and message", msg)
				}
			}
		}
		if perr != nil && errors == 0 {
			t.Fatalf("frame %q did not parse (%v) and got no error reply", data, perr)
		}
	})
}
