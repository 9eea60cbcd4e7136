package gitstore

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/thoughtbox/thoughtbox/ledger"
)

var knowledgeAuthor = ledger.Author{Name: "claude-code 1.0"}

func bisectPattern() ledger.KnowledgeEntry {
	return ledger.KnowledgeEntry{
		Kind: ledger.KindPattern, ID: "self-test-bisect-a-regression",
		Title:               "Self-test: bisect a regression",
		Description:         "Find the commit that broke a test by halving the range",
		Tags:                []string{"self-test", "debugging"},
		DerivedFromSessions: []string{"a1b2c3d4-0000-4000-8000-0000000000aa"},
		CreatedBy:           "claude-code 1.0",
		Content:             "## Steps\n1. Find a good and a bad commit\n2. Test the midpoint\n",
		CreatedAt:           t0, UpdatedAt: t0,
	}
}

// ignoreVersion compares entries by content; versions are checked apart.
var ignoreVersion = cmpopts.IgnoreFields(ledger.KnowledgeEntry{}, "Version")

func TestKnowledgeStore(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()

		if list, err := s.ListKnowledge(ctx, ledger.KindPattern); err != nil || len(list) != 0 {
			t.Fatalf("empty zone: ListKnowledge = %v, %v", list, err)
		}
		if _, err := s.ReadKnowledge(ctx, ledger.KindPattern, "nope"); !errors.Is(err, ledger.ErrKnowledgeNotFound) {
			t.Fatalf("ReadKnowledge(nope) = %v, want ErrKnowledgeNotFound", err)
		}

		p := bisectPattern()
		v1, err := s.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: p, Author: knowledgeAuthor, When: t0})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.ReadKnowledge(ctx, ledger.KindPattern, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(p, got, ignoreVersion); diff != "" {
			t.Errorf("read back (-want +got):\n%s", diff)
		}
		if got.Version != v1 || v1 == "" {
			t.Errorf("version = %q, write returned %q", got.Version, v1)
		}

		// A create on a taken id is refused, whatever its content.
		if _, err := s.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: p, Author: knowledgeAuthor, When: t0}); !errors.Is(err, ledger.ErrKnowledgeChanged) {
			t.Fatalf("second create = %v, want ErrKnowledgeChanged", err)
		}

		// An update from the current version lands; one from a stale version
		// does not.
		p2 := p
		p2.Content, p2.UpdatedAt = "## Steps\n1. git bisect run the test\n", t0.Add(time.Minute)
		v2, err := s.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: p2, Expected: v1, Author: knowledgeAuthor, When: p2.UpdatedAt})
		if err != nil {
			t.Fatal(err)
		}
		stale := p
		stale.Title = "Lost update"
		if _, err := s.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: stale, Expected: v1, Author: knowledgeAuthor, When: t0}); !errors.Is(err, ledger.ErrKnowledgeChanged) {
			t.Fatalf("stale update = %v, want ErrKnowledgeChanged", err)
		}

		// Notes live beside patterns; a note and a pattern may share an id.
		n := ledger.KnowledgeEntry{Kind: ledger.KindNote, ID: p.ID, Title: "Scratch", Content: "first draft", CreatedAt: t0, UpdatedAt: t0}
		if _, err := s.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: n, Author: knowledgeAuthor, When: t0}); err != nil {
			t.Fatal(err)
		}

		s = open() // the fs store reopens: everything comes back from Git
		pats, err := s.ListKnowledge(ctx, ledger.KindPattern)
		if err != nil {
			t.Fatal(err)
		}
		if len(pats) != 1 || pats[0].Version != v2 {
			t.Fatalf("patterns after reopen = %+v", pats)
		}
		if diff := cmp.Diff(p2, pats[0], ignoreVersion); diff != "" {
			t.Errorf("pattern after reopen (-want +got):\n%s", diff)
		}
		notes, err := s.ListKnowledge(ctx, ledger.KindNote)
		if err != nil {
			t.Fatal(err)
		}
		if len(notes) != 1 {
			t.Fatalf("notes = %+v", notes)
		}
		if diff := cmp.Diff(n, notes[0], ignoreVersion); diff != "" {
			t.Errorf("note (-want +got):\n%s", diff)
		}

		// Delete: from the current version only; the folder goes with its
		// last file; a second delete finds nothing.
		del := ledger.KnowledgeWrite{Entry: notes[0], Delete: true, Expected: notes[0].Version, Author: knowledgeAuthor, When: t0}
		if v, err := s.WriteKnowledge(ctx, del); err != nil || v != "" {
			t.Fatalf("delete note = %q, %v", v, err)
		}
		if _, err := s.ReadKnowledge(ctx, ledger.KindNote, n.ID); !errors.Is(err, ledger.ErrKnowledgeNotFound) {
			t.Fatalf("read deleted note = %v", err)
		}
		if _, err := s.WriteKnowledge(ctx, del); !errors.Is(err, ledger.ErrKnowledgeChanged) {
			t.Fatalf("second delete = %v, want ErrKnowledgeChanged", err)
		}
		k, err := s.readKnowledgeTip()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := k.root.Get("notes"); ok {
			t.Errorf("notes/ is still in the tree after its last note was deleted")
		}
		if _, ok := k.root.Get("patterns"); !ok {
			t.Errorf("patterns/ is gone")
		}
		if got := knowledgeHistory(t, s); !cmp.Equal(got, []string{
			"Delete note self-test-bisect-a-regression: Scratch",
			"Create note self-test-bisect-a-regression: Scratch",
			"Update pattern self-test-bisect-a-regression: Self-test: bisect a regression",
			"Create pattern self-test-bisect-a-regression: Self-test: bisect a regression",
		}) {
			t.Errorf("history:\n%s", strings.Join(got, "\n"))
		}
	})
}

// knowledgeHistory lists the subjects of refs/heads/knowledge, newest first.
func knowledgeHistory(t *testing.T, s *Store) []string {
	t.Helper()
	tip, err := s.be.ReadRef(t.Context(), knowledgeRef)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for tip != zeroHash {
		c, err := s.readCommit(tip)
		if err != nil {
			t.Fatal(err)
		}
		subject, _, _ := strings.Cut(c.Message, "\n")
		out = append(out, subject)
		tip = zeroHash
		if len(c.Parents) > 0 {
			tip = c.Parents[0]
		}
	}
	return out
}

// TestKnowledgeConcurrentWriters: writers of different entries share one
// ref; each loses some compare-and-swaps (the store's write is one attempt,
// answering ledger.ErrConflict) and the Knowledge service's one loop
// retries it, never failing, and every change must be one commit.
func TestKnowledgeConcurrentWriters(t *testing.T) {
	backends(t, func(t *testing.T, open func() *Store) {
		ctx := context.Background()
		s := open()
		k := ledger.NewKnowledge(s, ledger.KnowledgeOptions{Now: func() time.Time { return t0 }})
		const writers = 8
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := k.WriteNote(ctx, ledger.WriteNoteParams{ID: fmt.Sprintf("note-%d", i), Title: "Note", Content: "x"}, knowledgeAuthor); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		notes, err := s.ListKnowledge(ctx, ledger.KindNote)
		if err != nil {
			t.Fatal(err)
		}
		if len(notes) != writers {
			t.Errorf("%d notes, want %d", len(notes), writers)
		}
		if h := knowledgeHistory(t, s); len(h) != writers {
			t.Errorf("%d commits, want %d:\n%s", len(h), writers, strings.Join(h, "\n"))
		}
	})
}

// TestKnowledgeWithPlainGit: the zone is ordinary Git (git show, git log,
// fsck), and a pattern added by hand with git is read back.
func TestKnowledgeWithPlainGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed; this test needs it")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "p.git")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	p := bisectPattern()
	v1, err := s.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: p, Author: knowledgeAuthor, When: t0})
	if err != nil {
		t.Fatal(err)
	}
	p.Tags, p.UpdatedAt = []string{"debugging"}, t0.Add(time.Hour)
	if _, err := s.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: p, Expected: v1, Author: knowledgeAuthor, When: p.UpdatedAt}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}

	gitCLI(t, dir, "fsck", "--strict", "--no-dangling")
	file := gitCLI(t, dir, "show", "knowledge:patterns/"+p.ID+".md")
	want := `---
id: self-test-bisect-a-regression
title: "Self-test: bisect a regression"
description: Find the commit that broke a test by halving the range
tags: [debugging]
derivedFromSessions: [a1b2c3d4-0000-4000-8000-0000000000aa]
createdBy: claude-code 1.0
createdAt: 2026-11-22T10:00:00Z
updatedAt: 2026-11-22T11:00:00Z
---

## Steps
1. Find a good and a bad commit
2. Test the midpoint

`
	if diff := cmp.Diff(want, file); diff != "" {
		t.Errorf("git show knowledge:patterns/%s.md (-want +got):\n%s", p.ID, diff)
	}
	log := gitCLI(t, dir, "log", "--format=%an|%s|%(trailers:key=Thoughtbox-Knowledge,valueonly)", "knowledge")
	wantLog := "claude-code 1.0|Update pattern self-test-bisect-a-regression: Self-test: bisect a regression|pattern/self-test-bisect-a-regression\n\n" +
		"claude-code 1.0|Create pattern self-test-bisect-a-regression: Self-test: bisect a regression|pattern/self-test-bisect-a-regression\n\n"
	if log != wantLog {
		t.Errorf("git log knowledge:\n%s\nwant:\n%s", log, wantLog)
	}
	if diff := gitCLI(t, dir, "diff", "knowledge~1", "knowledge"); !strings.Contains(diff, "-tags: [self-test, debugging]\n+tags: [debugging]") {
		t.Errorf("git diff of the update:\n%s", diff)
	}

	// Someone adds a pattern by hand, without most of the front matter, and
	// commits it with plain Git.
	hand := "---\ntitle: Rubber duck\ntags:\n  - talking\n  - Debugging\n---\nExplain the code, line by line, to a duck.\n"
	handCommit(t, dir, "patterns/rubber-duck.md", hand)
	got, err := s.ReadKnowledge(ctx, ledger.KindPattern, "rubber-duck")
	if err != nil {
		t.Fatalf("a pattern committed with git: %v", err)
	}
	if got.Title != "Rubber duck" || !cmp.Equal(got.Tags, []string{"talking", "Debugging"}) || got.Content != "Explain the code, line by line, to a duck." {
		t.Errorf("hand-written pattern = %+v", got)
	}
	if got.CreatedAt.IsZero() || !got.CreatedAt.Equal(got.UpdatedAt) {
		t.Errorf("dates of a file without dates = %v, %v; want the commit's", got.CreatedAt, got.UpdatedAt)
	}
	// The store writes on top of the hand-made commit.
	n := ledger.KnowledgeEntry{Kind: ledger.KindNote, ID: "todo", Title: "To do", Content: "x", CreatedAt: t0, UpdatedAt: t0}
	if _, err := s.WriteKnowledge(ctx, ledger.KnowledgeWrite{Entry: n, Author: knowledgeAuthor, When: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if out := gitCLI(t, dir, "ls-tree", "-r", "--name-only", "knowledge"); out != "notes/todo.md\npatterns/rubber-duck.md\npatterns/self-test-bisect-a-regression.md\n" {
		t.Errorf("git ls-tree knowledge:\n%s", out)
	}
}

// handCommit commits one file onto refs/heads/knowledge with git plumbing,
// as a person pushing an edit would.
func handCommit(t *testing.T, dir, path, content string) {
	t.Helper()
	run := func(stdin string, env []string, args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		cmd.Env = append(cmd.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	index := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	who := []string{"GIT_AUTHOR_NAME=A Person", "GIT_AUTHOR_EMAIL=person@example.com", "GIT_COMMITTER_NAME=A Person", "GIT_COMMITTER_EMAIL=person@example.com"}
	blob := run(content, nil, "hash-object", "-w", "--stdin")
	old := run("", nil, "rev-parse", "knowledge")
	run("", index, "read-tree", "knowledge")
	run("", index, "update-index", "--add", "--cacheinfo", "100644,"+blob+","+path)
	tree := run("", index, "write-tree")
	c := run("Add "+path+" by hand\n", who, "commit-tree", tree, "-p", old)
	run("", nil, "update-ref", "refs/heads/knowledge", c, old)
}

func TestParseKnowledgeByHand(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       ledger.KnowledgeEntry
	}{
		{"no front matter", "# Just Markdown\n\nbody\n", ledger.KnowledgeEntry{Content: "# Just Markdown\n\nbody"}},
		{"unclosed front matter is content", "---\ntitle: x\nbody\n", ledger.KnowledgeEntry{Content: "---\ntitle: x\nbody"}},
		{"CRLF, BOM, snake_case keys, comments, single quotes",
			"\uFEFF---\r\n# a comment\r\ntitle: 'It''s fine' # trailing comment?\r\ncreated_at: 2026-11-22\r\nupdated-at: \"2026-11-23T10:00:00+02:00\"\r\n---\r\n\r\nbody\r\n",
			ledger.KnowledgeEntry{Title: "It's fine", Content: "body\r",
				CreatedAt: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)}},
		{"plain comment and comma list", "---\ntitle: Plain title # note\ntags: a, b ,, c\n---\n",
			ledger.KnowledgeEntry{Title: "Plain title", Tags: []string{"a", "b", "c"}}},
		{"block list and literal block", "---\ntags:\n- one\n-   \"two, three\"\ndescription: |\n  line one\n    indented\n\n---\nx",
			ledger.KnowledgeEntry{Tags: []string{"one", "two, three"}, Description: "line one\n  indented", Content: "x"}},
		{"folded block and multi-line plain", "---\ndescription: >\n  folded\n  text\ntitle: a title\n  continued\n...\nx",
			ledger.KnowledgeEntry{Title: "a title continued", Description: "folded text", Content: "x"}},
		{"escapes and surrogates", "---\ntitle: \"tab\\there \\u00e9 \\ud83d\\ude00 \\x41 \\q\"\n---\n",
			ledger.KnowledgeEntry{Title: "tab\there é 😀 A \\q"}},
		{"bad date and unknown keys", "---\ncreatedAt: last tuesday\ncolour: blue\nnested:\n  a: b\n---\n", ledger.KnowledgeEntry{}},
		{"unterminated quote", "---\ntitle: \"open\n---\n", ledger.KnowledgeEntry{Title: "open"}},
		{"flow list with quotes", "---\ntags: ['a, b', \"c]\", d ]\n---\n", ledger.KnowledgeEntry{Tags: []string{"a, b", "c]", "d"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseKnowledge([]byte(tc.file))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("parseKnowledge(%q) (-want +got):\n%s", tc.file, diff)
			}
		})
	}
}

// FuzzParseKnowledge: any file parses without panicking, and what it
// parses to is a fixed point: written back and read again, it is the same
// entry. So a hand-edited file survives the store's rewrite of it.
func FuzzParseKnowledge(f *testing.F) {
	f.Add([]byte(encodeKnowledge(bisectPattern())))
	f.Add([]byte("---\ntags:\n- one\n-   \"two, three\"\ndescription: |\n  line one\n---\nx"))
	f.Add([]byte("\uFEFF---\r\ntitle: 'It''s'\r\ncreated_at: 2026-11-22\r\n---\r\n\r\nbody\r\n"))
	f.Add([]byte("---\ntitle: \"\\ud83d\\ude00 \\x41\"\ntags: [a, 'b', \"c\"]\n...\n"))
	f.Add([]byte("no front matter at all"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e := parseKnowledge(data)
		e.Kind, e.ID = ledger.KindPattern, "x"
		again := parseKnowledge(encodeKnowledge(e))
		again.Kind, again.ID = e.Kind, e.ID
		if diff := cmp.Diff(e, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("not a fixed point for %q (-first +second):\n%s", data, diff)
		}
	})
}

// FuzzKnowledgeRoundTrip: whatever the ledger accepts is written and read
// back exactly, content byte for byte.
func FuzzKnowledgeRoundTrip(f *testing.F) {
	f.Add("Self-test: bisect a regression", "Find it", "self-test", "claude-code 1.0", "## Steps\n1. x\n", int64(1795000000123456789))
	f.Add("yes", " ", "a, b]", "", "---\nnot: front matter\n---\n\n", int64(0))
	f.Add("\"'#", "multi\nline\ttab", "\u2028", "x\x7f", "\r\n", int64(-1))
	f.Fuzz(func(t *testing.T, title, description, tag, createdBy, content string, nanos int64) {
		for _, s := range []string{title, description, tag, createdBy} {
			if !utf8.ValidString(s) {
				return // the ledger refuses these
			}
		}
		e := ledger.KnowledgeEntry{Kind: ledger.KindPattern, ID: "p", Title: title, Description: description,
			CreatedBy: createdBy, Content: content, CreatedAt: time.Unix(0, nanos).UTC(), UpdatedAt: t0}
		if strings.TrimSpace(tag) != "" {
			e.Tags = []string{tag}
		}
		got := parseKnowledge(encodeKnowledge(e))
		got.Kind, got.ID = e.Kind, e.ID
		if diff := cmp.Diff(e, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
	})
}
