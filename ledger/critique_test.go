package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

var critic = ledger.Author{Name: "claude-sonnet-4-5-20250929"}

func TestAddCritique(t *testing.T) {
	ctx := context.Background()

	t.Run("updates the one view and the store", func(t *testing.T) {
		e := setup(t)
		id := e.start(t)
		first := e.add(t, id, th("the cache is stale"))
		e.add(t, id, th("so flush it"))
		before := e.view(t, id) // a snapshot taken before must not change

		res, err := e.l.AddCritique(ctx, id, "", 1, ledger.Critique{Text: "assumes one writer", Model: "m"}, critic)
		if err != nil {
			t.Fatal(err)
		}
		if res.Node.Data.Critique == nil || res.Node.Data.Critique.Text != "assumes one writer" {
			t.Fatalf("node critique = %+v", res.Node.Data.Critique)
		}
		if res.Node.Data.Critique.Timestamp.IsZero() {
			t.Error("critique timestamp not set from the ledger's clock")
		}
		if res.Node.Commit() != first.Node.Commit() || res.Commit == first.Node.Commit() {
			t.Errorf("node commit %s, critique commit %s; want the thought's own commit %s and a new one",
				res.Node.Commit(), res.Commit, first.Node.Commit())
		}
		if n, _ := before.Graph.Thought(1); n.Data.Critique != nil {
			t.Error("an earlier snapshot saw the critique")
		}
		if n, _ := e.view(t, id).Graph.Thought(1); n.Data.Critique == nil {
			t.Error("the view has no critique")
		}
		// The next thought is committed on top of the critique's commit:
		// the fake store refuses a stale tip, so this fails if the view
		// kept the old one.
		if calls, _ := e.store.stats(); calls != 2 {
			t.Fatalf("Append calls = %d before the third thought", calls)
		}
		e.add(t, id, th("three"))
		if calls, _ := e.store.stats(); calls != 3 {
			t.Errorf("Append calls = %d, want 3: the view's tip was stale after the critique", calls)
		}
		// A fresh ledger over the same store reads the critique back.
		other := setupWith(t, e.store)
		v, err := other.l.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := v.Graph.Thought(1); n.Data.Critique == nil || n.Data.Critique.Text != "assumes one writer" {
			t.Errorf("reloaded thought 1 critique = %+v", n.Data.Critique)
		}
	})

	t.Run("branch thought", func(t *testing.T) {
		e := setup(t)
		id := e.start(t)
		e.add(t, id, th("1"))
		e.add(t, id, onBranch(th("alt"), "alt", 1))
		res, err := e.l.AddCritique(ctx, id, "alt", 2, ledger.Critique{Text: "why branch?", Model: "m", Timestamp: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, critic)
		if err != nil {
			t.Fatal(err)
		}
		if res.Node.ID != id+":alt:2" {
			t.Errorf("critiqued %s", res.Node.ID)
		}
		e.add(t, id, onBranch(th("alt 2"), "alt", 1)) // on the branch's new tip
	})

	t.Run("retries after another writer", func(t *testing.T) {
		e := setup(t)
		id := e.start(t)
		e.add(t, id, th("1"))
		e.store.sneak(id, "", ledger.ThoughtData{Thought: "elsewhere", ThoughtNumber: 2, TotalThoughts: 2, NextThoughtNeeded: true})
		if _, err := e.l.AddCritique(ctx, id, "", 1, ledger.Critique{Text: "c", Model: "m"}, critic); err != nil {
			t.Fatal(err)
		}
		v := e.view(t, id)
		if v.Graph.Len() != 2 {
			t.Errorf("view holds %d thoughts, want the other writer's too", v.Graph.Len())
		}
		if n, _ := v.Graph.Thought(1); n.Data.Critique == nil {
			t.Error("critique lost in the retry")
		}
	})

	t.Run("refusals", func(t *testing.T) {
		e := setup(t)
		id := e.start(t)
		e.add(t, id, th("1"))
		_, err := e.l.AddCritique(ctx, id, "", 7, ledger.Critique{Text: "c"}, critic)
		wantErr{code: ledger.CodeThoughtNotFound, field: "thoughtNumber", sentinel: ledger.ErrThoughtNotFound}.check(t, err)
		_, err = e.l.AddCritique(ctx, id, "", 1, ledger.Critique{Text: "  "}, critic)
		wantErr{code: ledger.CodeInvalidPayload, field: "critique.text"}.check(t, err)
		_, err = e.l.AddCritique(ctx, "nope", "", 1, ledger.Critique{Text: "c"}, critic)
		wantErr{code: ledger.CodeSessionNotFound}.check(t, err)
	})
}

func TestRLMResultIsCommittedWithTheThought(t *testing.T) {
	e := setup(t)
	id := e.start(t)
	in := th("look it up")
	in.RLM = &ledger.RLMResult{Query: "q", Status: ledger.RLMFinal, Answer: "42", Iterations: 1}
	res := e.add(t, id, in)
	if res.Thought.RLM == nil || res.Thought.RLM.Answer != "42" {
		t.Fatalf("result RLM = %+v", res.Thought.RLM)
	}
	other := setupWith(t, e.store)
	v, err := other.l.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := v.Graph.Thought(1); n.Data.RLM == nil || n.Data.RLM.Answer != "42" {
		t.Errorf("stored RLM = %+v", n.Data.RLM)
	}
	if calls, _ := e.store.stats(); calls != 1 {
		t.Errorf("Append calls = %d, want one commit", calls)
	}
}
