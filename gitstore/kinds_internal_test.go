package gitstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// TestKindsClassifyRefs pins what the kinds table says of refs of both
// layouts: the kind, the unit a transfer moves, the entity's ids, whether
// a transfer moves the ref and whether a pull takes it.
func TestKindsClassifyRefs(t *testing.T) {
	type want struct {
		kind, group, session, notebook, links string
		shared, valid                         bool
	}
	const id = "5a0e0000-0000-4000-8000-000000000001"
	for _, l := range []Layout{Standalone, InCode} {
		r := l.refRoot()
		links := want{kind: "session", group: "session " + id, session: id, shared: true}
		if l == InCode {
			links = want{kind: "links", group: "links " + id, session: id, links: id, shared: true, valid: true}
		}
		cases := map[string]want{
			r + "sessions/" + id + "/main":          {kind: "session", group: "session " + id, session: id, shared: true, valid: true},
			r + "sessions/" + id + "/branches/b-1":  {kind: "session", group: "session " + id, session: id, shared: true, valid: true},
			r + "sessions/" + id + "/branches/B..x": {kind: "session", group: "session " + id, session: id, shared: true},
			r + "sessions/" + id + "/junk":          {kind: "session", group: "session " + id, session: id, shared: true},
			r + "sessions/" + id + "/links":         links,
			r + "sessions/Bad/main":                 {kind: "session", group: "session Bad", session: "Bad", shared: true},
			r + "sessions/Bad/links":                {kind: "session", group: "session Bad", session: "Bad", shared: true},
			r + "sessions/":                         {group: r + "sessions/", shared: true},
			r + "knowledge":                         {kind: "knowledge", group: r + "knowledge", shared: true, valid: true},
			r + "knowledge2":                        {group: r + "knowledge2"},
			r + "notebooks/plan-1":                  {kind: "notebook", group: r + "notebooks/plan-1", notebook: "plan-1", shared: true, valid: true},
			r + "notebooks/Plan_1":                  {kind: "notebook", group: r + "notebooks/Plan_1", shared: true},
			r + "other":                             {group: r + "other"},
			"refs/heads/main":                       {group: "refs/heads/main", shared: l == Standalone},
			"refs/tags/v1":                          {group: "refs/tags/v1"},
		}
		for ref, w := range cases {
			k, _, _ := l.kindOf(ref)
			got := want{group: l.groupOf(ref), session: l.sessionOfRef(ref), notebook: l.notebookOfRef(ref),
				links: l.linksOfRef(ref), shared: l.shared(ref), valid: l.validSharedRef(ref)}
			if k != nil {
				got.kind = k.name
			}
			if got != w {
				t.Errorf("%s, %s: got %+v, want %+v", l, ref, got, w)
			}
		}
	}
	if got := Standalone.flusherRefRoots(); strings.Join(got, " ") != "refs/heads/sessions refs/heads/knowledge refs/heads/notebooks" {
		t.Errorf("flusherRefRoots = %q", got)
	}
}

// TestCheckIncomingKnowledgeEitherLayout checks that a pull's check of the
// knowledge zone is its kind's, whichever root the layout puts the ref
// under: a knowledge commit holding a stray file is refused in a code
// repository as in a standalone ledger.
func TestCheckIncomingKnowledgeEitherLayout(t *testing.T) {
	for _, l := range []Layout{Standalone, InCode} {
		s, err := OpenMemory(Options{Layout: l})
		if err != nil {
			t.Fatal(err)
		}
		b := &batch{}
		data := []byte("stray\n")
		blob := object.HashObject(typeBlob, data)
		b.Objects = append(b.Objects, logObject{ID: blob, Type: typeBlob, Data: data})
		root := &object.Tree{}
		root.Set(object.TreeEntry{Name: "stray.txt", ID: blob})
		tip := addCommit(b, commitSpec{tree: addTree(b, root), message: "stray\n", when: time.Unix(1, 0)})
		if err := s.Apply(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		ref := l.knowledge()
		problems, err := s.CheckIncoming(context.Background(), ref, map[string]hash{ref: tip}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) != 1 || !strings.Contains(problems[0], "stray.txt: expected only the folders patterns/ and notes/") {
			t.Errorf("%s: problems = %q, want the stray file named", l, problems)
		}
		// A notebook's diverged tips are kept aside, never merged.
		if _, _, ok, err := s.MergeDiverged(l.notebookRef("plan"), tip, tip, "origin"); ok || err != nil {
			t.Errorf("%s: MergeDiverged of a notebook = %v, %v; want no merge", l, ok, err)
		}
		s.Close()
	}
}
