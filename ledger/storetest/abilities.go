package storetest

// The contract of the parts of ledger.Store beyond the core
// (ledger.ChainCatchUp and the others Run lists after the core). Every
// store has every part, so none of these is skipped; each reaches its part
// through the composed interface.

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

func testChainCatchUp(t *testing.T, s ledger.Store) {
	var cu ledger.ChainCatchUp = s
	ctx := context.Background()
	c := create(t, s, 1)
	start := c.tips[""]
	c1 := c.add("", thought(1, "one"))
	c2 := c.add("", thought(2, "two"))
	c7 := c.add("", thought(7, "seven"))
	td := thought(3, "alt three")
	td.BranchFromThought = intp(2)
	b3 := c.fork("alt", td, c2)
	td.ThoughtNumber, td.Thought = 4, "alt four"
	b4 := c.add("alt", td)

	for _, tc := range []struct {
		name    string
		branch  string
		since   ledger.CommitID
		numbers []int
		commits []ledger.CommitID
		tip     ledger.CommitID
	}{
		{"from the start", "", start, []int{1, 2, 7}, []ledger.CommitID{c1, c2, c7}, c7},
		{"from thought 1", "", c1, []int{2, 7}, []ledger.CommitID{c2, c7}, c7},
		{"up to date", "", c7, []int{}, []ledger.CommitID{}, c7},
		{"a branch", "alt", b3, []int{4}, []ledger.CommitID{b4}, b4},
		{"a branch from its fork", "alt", c2, []int{3, 4}, []ledger.CommitID{b3, b4}, b4},
	} {
		th, tip, ok, err := cu.ThoughtsSince(ctx, c.meta.ID, tc.branch, tc.since)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		// A store may decline (ok false); when it answers, it answers right.
		if ok && (!slices.Equal(numbers(th), tc.numbers) || !slices.Equal(commits(th), tc.commits) || tip != tc.tip) {
			t.Errorf("%s: %v %v tip %s; want %v %v tip %s", tc.name, numbers(th), commits(th), tip, tc.numbers, tc.commits, tc.tip)
		}
	}
	// Whatever is not only new thoughts on that chain must not be answered
	// as if it were: a critique rewrote thought 2.
	crit := ledger.Critique{Text: "why seven?", Model: "m", Timestamp: T0.Add(time.Hour)}
	if _, err := s.AddCritique(ctx, ledger.CritiqueRequest{Meta: c.meta, ExpectedTip: c7, ThoughtNumber: 2, Critique: crit, Author: author}); err != nil {
		t.Fatal(err)
	}
	if th, _, ok, err := cu.ThoughtsSince(ctx, c.meta.ID, "", c1); err != nil || ok {
		t.Errorf("across a critique: %v, ok %v, %v; want ok false", numbers(th), ok, err)
	}
	// A commit that is not on the chain.
	if _, _, ok, err := cu.ThoughtsSince(ctx, c.meta.ID, "", b3); err != nil || ok {
		t.Errorf("since a commit of another chain: ok %v, %v; want ok false", ok, err)
	}
}

func testSessionEditor(t *testing.T, s ledger.Store) {
	var ed ledger.SessionEditor = s
	ctx := context.Background()
	c := create(t, s, 1)
	c.add("", thought(1, "one"))
	meta := c.meta
	meta.Title, meta.Description, meta.Tags, meta.UpdatedAt = "Why the cache really misses", "", []string{"cache"}, T0.Add(time.Hour)
	tip, err := ed.UpdateSession(ctx, ledger.UpdateSessionRequest{Meta: meta, ExpectedTip: c.tips[""], Changed: []string{"title", "description", "tags"}, Author: author})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ed.UpdateSession(ctx, ledger.UpdateSessionRequest{Meta: c.meta, ExpectedTip: c.tips[""], Changed: []string{"title"}, Author: author}); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("UpdateSession from a stale tip: %v, want ErrConflict", err)
	}
	ss := c.load()
	if ss.MainTip != tip || ss.Meta.Title != meta.Title || ss.Meta.Description != "" || !slices.Equal(ss.Meta.Tags, []string{"cache"}) {
		t.Errorf("after UpdateSession: tip %s (want %s), meta %+v", ss.MainTip, tip, ss.Meta)
	}
	if !ss.Meta.CreatedAt.Equal(T0) {
		t.Errorf("UpdateSession changed CreatedAt to %s", ss.Meta.CreatedAt)
	}
	if len(ss.Main) != 1 || ss.Main[0].Data.Thought != "one" {
		t.Errorf("UpdateSession changed the thoughts: %+v", ss.Main)
	}
}

func testSessionDeleter(t *testing.T, s ledger.Store) {
	var d ledger.SessionDeleter = s
	ctx := context.Background()
	c := create(t, s, 1)
	one := c.add("", thought(1, "one"))
	td := thought(2, "branch")
	td.BranchFromThought = intp(1)
	c.fork("alt", td, one)
	keep := create(t, s, 2)
	before := c.load()

	if list, err := d.DeletedSessions(); err != nil || len(list) != 0 {
		t.Fatalf("deleted sessions of a new store: %+v, %v", list, err)
	}
	ds, err := d.DeleteSession(ctx, c.meta.ID, c.meta.Title, author, T0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if ds.ID != c.meta.ID || !ds.DeletedAt.Equal(T0.Add(time.Hour)) || ds.DeletedBy != author.Name {
		t.Errorf("DeleteSession returned %+v", ds)
	}
	if _, err := s.LoadSession(ctx, c.meta.ID); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Errorf("LoadSession of a deleted session: %v, want ErrSessionNotFound", err)
	}
	list, err := s.ListSessions(ctx)
	if err != nil || len(list) != 1 || list[0].Meta.ID != keep.meta.ID {
		t.Errorf("listing after a delete: %+v, %v; want only %s", list, err, keep.meta.ID)
	}
	deleted, err := d.DeletedSessions()
	if err != nil || len(deleted) != 1 || deleted[0].ID != c.meta.ID {
		t.Errorf("DeletedSessions: %+v, %v", deleted, err)
	}
	if _, err := d.DeleteSession(ctx, sessionID(404), "", author, T0); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Errorf("deleting an unknown session: %v, want ErrSessionNotFound", err)
	}
	if _, err := d.RestoreSession(ctx, keep.meta.ID); !errors.Is(err, ledger.ErrSessionNotFound) {
		t.Errorf("restoring a session that is not deleted: %v, want ErrSessionNotFound", err)
	}

	if _, err := d.RestoreSession(ctx, c.meta.ID); err != nil {
		t.Fatal(err)
	}
	after := c.load()
	if after.MainTip != before.MainTip || !slices.Equal(commits(after.Main), commits(before.Main)) || len(after.Branches) != 1 ||
		after.Branches[0].Tip != before.Branches[0].Tip {
		t.Errorf("restored session differs: %+v, was %+v", after, before)
	}
	if deleted, err := d.DeletedSessions(); err != nil || len(deleted) != 0 {
		t.Errorf("DeletedSessions after restore: %+v, %v", deleted, err)
	}
	c.add("", thought(2, "after the restore"))
}

func testKnowledgeStore(t *testing.T, s ledger.Store) {
	var ks ledger.KnowledgeStore = s
	ctx := context.Background()
	if list, err := ks.ListKnowledge(ctx, ledger.KindPattern); err != nil || len(list) != 0 {
		t.Fatalf("patterns of a new store: %+v, %v", list, err)
	}
	if _, err := ks.ReadKnowledge(ctx, ledger.KindPattern, "nope"); !errors.Is(err, ledger.ErrKnowledgeNotFound) {
		t.Errorf("reading a missing pattern: %v, want ErrKnowledgeNotFound", err)
	}
	p := ledger.KnowledgeEntry{Kind: ledger.KindPattern, ID: "cache-warmup", Title: "Warm the cache first", Description: "what worked",
		Tags: []string{"cache"}, DerivedFromSessions: []string{sessionID(1)}, CreatedBy: "agent", Content: "Warm it.\n",
		CreatedAt: T0, UpdatedAt: T0}
	v1, err := ks.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: p, Author: author, When: T0})
	if err != nil || v1 == "" {
		t.Fatalf("create a pattern: %q, %v", v1, err)
	}
	if _, err := ks.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: p, Author: author, When: T0}); !errors.Is(err, ledger.ErrKnowledgeChanged) {
		t.Errorf("creating a pattern that exists: %v, want ErrKnowledgeChanged", err)
	}
	note := ledger.KnowledgeEntry{Kind: ledger.KindNote, ID: "todo", Title: "To do", Content: "check the TTL", CreatedAt: T0, UpdatedAt: T0}
	if _, err := ks.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: note, Author: author, When: T0}); err != nil {
		t.Fatal(err)
	}
	got, err := ks.ReadKnowledge(ctx, ledger.KindPattern, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != v1 || got.Title != p.Title || got.Description != p.Description || got.Content != p.Content ||
		!slices.Equal(got.Tags, p.Tags) || !slices.Equal(got.DerivedFromSessions, p.DerivedFromSessions) || !got.CreatedAt.Equal(T0) {
		t.Errorf("pattern read back as %+v", got)
	}
	if list, err := ks.ListKnowledge(ctx, ledger.KindPattern); err != nil || len(list) != 1 || list[0].ID != p.ID {
		t.Errorf("patterns: %+v, %v; notes must not be listed with them", list, err)
	}

	p2 := p
	p2.Content, p2.UpdatedAt = "Warm it, then measure.\n", T0.Add(time.Hour)
	v2, err := ks.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: p2, Expected: v1, Author: author, When: p2.UpdatedAt})
	if err != nil || v2 == "" || v2 == v1 {
		t.Fatalf("update: %q, %v", v2, err)
	}
	p3 := p
	p3.Content = "a writer that read version 1"
	if _, err := ks.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: p3, Expected: v1, Author: author, When: T0}); !errors.Is(err, ledger.ErrKnowledgeChanged) {
		t.Errorf("update from a stale version: %v, want ErrKnowledgeChanged", err)
	}
	if got, _ := ks.ReadKnowledge(ctx, ledger.KindPattern, p.ID); got.Content != p2.Content {
		t.Errorf("after a refused update the pattern reads %q", got.Content)
	}
	// An entry's version is its own: writing the note did not conflict,
	// and deleting it does not change the pattern.
	n, err := ks.ReadKnowledge(ctx, ledger.KindNote, "todo")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ks.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: n, Delete: true, Expected: n.Version, Author: author, When: T0}); err != nil || v != "" {
		t.Fatalf("delete: %q, %v", v, err)
	}
	if _, err := ks.ReadKnowledge(ctx, ledger.KindNote, "todo"); !errors.Is(err, ledger.ErrKnowledgeNotFound) {
		t.Errorf("reading a deleted note: %v, want ErrKnowledgeNotFound", err)
	}
	if got, err := ks.ReadKnowledge(ctx, ledger.KindPattern, p.ID); err != nil || got.Version != v2 {
		t.Errorf("the pattern after deleting a note: %+v, %v", got, err)
	}
}

func testNotebookStore(t *testing.T, s ledger.Store) {
	var ns ledger.NotebookStore = s
	ctx := context.Background()
	if list, err := ns.ListNotebooks(ctx); err != nil || len(list) != 0 {
		t.Fatalf("notebooks of a new store: %+v, %v", list, err)
	}
	if _, _, err := ns.ReadNotebook(ctx, "nope"); !errors.Is(err, ledger.ErrNotebookNotFound) {
		t.Errorf("reading a missing notebook: %v, want ErrNotebookNotFound", err)
	}
	files := map[string][]byte{"notebook.json": []byte(`{"title":"probe"}` + "\n"), "cells/01-setup.md": []byte("# setup\n")}
	w := ledger.NotebookWrite{ID: "probe", Files: files, Message: "Create notebook probe", Author: author, When: T0}
	tip1, err := ns.WriteNotebook(ctx, w)
	if err != nil || tip1 == "" {
		t.Fatalf("create: %q, %v", tip1, err)
	}
	if _, err := ns.WriteNotebook(ctx, w); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("creating a notebook that exists: %v, want ErrConflict", err)
	}
	got, tip, err := ns.ReadNotebook(ctx, "probe")
	if err != nil || tip != tip1 || len(got) != 2 || string(got["cells/01-setup.md"]) != "# setup\n" {
		t.Errorf("read back: %q, tip %s (want %s), %v", got, tip, tip1, err)
	}
	// The files written are the whole folder: one not listed is removed.
	w2 := ledger.NotebookWrite{ID: "probe", ExpectedTip: tip1, Message: "Replace cell", Author: author, When: T0.Add(time.Minute),
		Files: map[string][]byte{"notebook.json": files["notebook.json"], "cells/02-check.md": []byte("# check\n")}}
	tip2, err := ns.WriteNotebook(ctx, w2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ns.WriteNotebook(ctx, w2); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("a write from a stale tip: %v, want ErrConflict", err)
	}
	got, tip, err = ns.ReadNotebook(ctx, "probe")
	if _, old := got["cells/01-setup.md"]; err != nil || tip != tip2 || old || len(got) != 2 {
		t.Errorf("after replacing the folder: %q, tip %s (want %s), %v", got, tip, tip2, err)
	}
	list, err := ns.ListNotebooks(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "probe" || list[0].Tip != tip2 {
		t.Errorf("notebooks: %+v, %v", list, err)
	}
	// Notebooks are no sessions.
	if sums, err := s.ListSessions(ctx); err != nil || len(sums) != 0 {
		t.Errorf("sessions of a store with one notebook: %+v, %v", sums, err)
	}
}

func testNotebookDeleter(t *testing.T, s ledger.Store) {
	var nd, ns ledger.NotebookStore = s, s
	ctx := context.Background()
	if _, err := nd.DeleteNotebook(ctx, "nope", "", author, T0); !errors.Is(err, ledger.ErrNotebookNotFound) {
		t.Errorf("deleting a missing notebook: %v, want ErrNotebookNotFound", err)
	}
	write := func(id string, expected ledger.CommitID, body string) ledger.CommitID {
		t.Helper()
		tip, err := ns.WriteNotebook(ctx, ledger.NotebookWrite{ID: id, ExpectedTip: expected, Message: "Write " + body, Author: author, When: T0,
			Files: map[string][]byte{"notebook.json": []byte(body + "\n")}})
		if err != nil {
			t.Fatal(err)
		}
		return tip
	}
	tip1 := write("gone", "", "first")
	tip2 := write("gone", tip1, "second")
	write("kept", "", "other")
	if _, err := nd.DeleteNotebook(ctx, "gone", tip1, author, T0); !errors.Is(err, ledger.ErrConflict) {
		t.Errorf("deleting from a stale tip: %v, want ErrConflict", err)
	}
	if _, _, err := ns.ReadNotebook(ctx, "gone"); err != nil {
		t.Fatalf("a refused delete removed the notebook: %v", err)
	}
	d, err := nd.DeleteNotebook(ctx, "gone", tip2, author, T0.Add(time.Minute))
	if err != nil || d.ID != "gone" || d.Tip != tip2 {
		t.Fatalf("delete: %+v, %v (want tip %s)", d, err, tip2)
	}
	if _, _, err := ns.ReadNotebook(ctx, "gone"); !errors.Is(err, ledger.ErrNotebookNotFound) {
		t.Errorf("reading a deleted notebook: %v, want ErrNotebookNotFound", err)
	}
	if list, err := ns.ListNotebooks(ctx); err != nil || len(list) != 1 || list[0].ID != "kept" {
		t.Errorf("notebooks after a delete: %+v, %v", list, err)
	}
	if _, err := nd.DeleteNotebook(ctx, "gone", "", author, T0); !errors.Is(err, ledger.ErrNotebookNotFound) {
		t.Errorf("deleting it twice: %v, want ErrNotebookNotFound", err)
	}
	// The id is free again, and its new notebook can be deleted in turn.
	again := write("gone", "", "third")
	if d2, err := nd.DeleteNotebook(ctx, "gone", "", author, T0); err != nil || d2.Tip != again {
		t.Errorf("deleting a second notebook of the id: %+v, %v", d2, err)
	}
}

func testSessionLocker(t *testing.T, s ledger.Store) {
	var sl ledger.SessionLocker = s
	ctx := context.Background()
	c := create(t, s, 1)
	unlock, err := sl.LockSession(ctx, c.meta.ID)
	if err != nil || unlock == nil {
		t.Fatalf("LockSession: %v", err)
	}
	// The lock is no obstacle to the holder's writes, nor to other sessions.
	c.add("", thought(1, "under the lock"))
	other, err := sl.LockSession(ctx, sessionID(2))
	if err != nil {
		t.Fatalf("locking another session while one is held: %v", err)
	}
	other()
	unlock()
	// Let go, it can be taken again.
	again, err := sl.LockSession(ctx, c.meta.ID)
	if err != nil {
		t.Fatalf("LockSession after unlock: %v", err)
	}
	again()
}

func testAccessKeeper(t *testing.T, s ledger.Store) {
	var ak ledger.AccessKeeper = s
	c := create(t, s, 1)
	at := T0.Add(2 * time.Hour)
	ak.RecordAccess(c.meta.ID, at)
	if got := ak.Accessed()[c.meta.ID]; !got.Equal(at) {
		t.Errorf("Accessed()[%s] = %s, want %s", c.meta.ID, got, at)
	}
	// Recording access is no commit.
	if ss := c.load(); ss.MainTip != c.tips[""] {
		t.Errorf("RecordAccess moved the main chain to %s", ss.MainTip)
	}
}

func testAccessLookup(t *testing.T, s ledger.Store) {
	var al ledger.AccessLookup = s
	c := create(t, s, 1)
	if got := al.AccessedAt(c.meta.ID); !got.IsZero() {
		t.Errorf("AccessedAt of a session never read: %s, want zero", got)
	}
	at := T0.Add(3 * time.Hour)
	s.RecordAccess(c.meta.ID, at)
	if got := al.AccessedAt(c.meta.ID); !got.Equal(at) {
		t.Errorf("AccessedAt(%s) = %s, want %s (what RecordAccess noted)", c.meta.ID, got, at)
	}
	if got := al.AccessedAt(sessionID(404)); !got.IsZero() {
		t.Errorf("AccessedAt of an unknown session: %s, want zero", got)
	}
}

func testSessionChecker(t *testing.T, s ledger.Store) {
	var sc ledger.SessionChecker = s
	ctx := context.Background()
	c := create(t, s, 12)
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{c.meta.ID, true},
		{c.meta.ID[:len(c.meta.ID)-1], false}, // a prefix is no whole id
		{sessionID(404), false},
		{"Not An Id/..", false},
	} {
		if got, err := sc.HasSession(ctx, tc.id); err != nil || got != tc.want {
			t.Errorf("HasSession(%q) = %v, %v; want %v", tc.id, got, err, tc.want)
		}
	}
	var d ledger.SessionDeleter = s
	if gone, err := d.IsDeleted(c.meta.ID); err != nil || gone {
		t.Errorf("IsDeleted of a live session: %v, %v", gone, err)
	}
	if _, err := d.DeleteSession(ctx, c.meta.ID, c.meta.Title, author, T0); err != nil {
		t.Fatal(err)
	}
	if found, err := sc.HasSession(ctx, c.meta.ID); err != nil || found {
		t.Errorf("HasSession of a deleted session: %v, %v; want false", found, err)
	}
	if gone, err := d.IsDeleted(c.meta.ID); err != nil || !gone {
		t.Errorf("IsDeleted of a deleted session: %v, %v; want true", gone, err)
	}
	if gone, err := d.IsDeleted(sessionID(404)); err != nil || gone {
		t.Errorf("IsDeleted of a session that never was: %v, %v", gone, err)
	}
}

// testSessionIndexer: every store keeps an index (the ledger lists and
// searches through it alone), and it answers what ListSessions answers.
func testSessionIndexer(t *testing.T, s ledger.Store) {
	var si ledger.SessionIndexer = s
	ix := si.SessionIndex()
	if ix == nil {
		t.Fatal("SessionIndex is nil: every store must keep an index of its sessions")
	}
	ctx := context.Background()
	a := create(t, s, 1)
	a.add("", thought(1, "quokka sighted"))
	create(t, s, 2)
	page, total, err := ix.PageSessions(ctx, 0, 10)
	if err != nil || total != 2 || len(page) != 2 {
		t.Fatalf("PageSessions: %+v, %d, %v; want both sessions", page, total, err)
	}
	found, _, err := ix.FindSessions(ctx, []string{"quokka"})
	if err != nil || len(found) != 1 || found[0].Summary.Meta.ID != a.meta.ID {
		t.Errorf("FindSessions(quokka): %+v, %v; want %s", found, err, a.meta.ID)
	}
	// A write shows at the next call: the session is read again.
	a.add("", thought(2, "quokka and wombat"))
	found, read, err := ix.FindSessions(ctx, []string{"wombat", "quokka"})
	if err != nil || len(found) != 1 || read != 1 || found[0].Summary.ThoughtCount != 2 ||
		len(found[0].Words) != 2 || found[0].Words[1].Thoughts != 2 {
		t.Errorf("FindSessions(wombat quokka) after a write: %+v, read %d, %v; want %s, its 2 thoughts read again", found, read, err, a.meta.ID)
	}
}
