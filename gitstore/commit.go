package gitstore

import (
	"context"
	"errors"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// commitSpec is a commit the store writes. Every commit of a session
// chain, the knowledge zone, a notebook, a deletion record and the README
// is made by addCommit, so they agree on who committed, on dates and on
// how an author is written.
type commitSpec struct {
	tree hash
	// parents: a zero hash (no parent yet) is left out.
	parents []hash
	message string
	// author is the agent the commit is for; nil when Thoughtbox writes
	// on its own behalf (the README), then it is author and committer.
	author *ledger.Author
	// when is both dates: a thought's commit carries its timestamp.
	when time.Time
}

// addCommit encodes c with Thoughtbox as committer, logs it in b and
// returns its id.
func addCommit(b *batch, c commitSpec) hash {
	committer := object.Signature{Name: committerName, Email: committerEmail, When: c.when.UTC()}
	author := committer
	if c.author != nil {
		author = sig(*c.author, c.when)
	}
	cm := &object.Commit{Tree: c.tree, Author: author, Committer: committer, Message: c.message}
	for _, p := range c.parents {
		if p != zeroHash {
			cm.Parents = append(cm.Parents, p)
		}
	}
	data := cm.Encode()
	id := object.HashObject(typeCommit, data)
	b.Objects = append(b.Objects, logObject{ID: id, Type: typeCommit, Data: data})
	return id
}

// addTree logs a tree object and returns its id.
func addTree(b *batch, t *object.Tree) hash {
	data := t.Encode()
	id := object.HashObject(typeTree, data)
	b.Objects = append(b.Objects, logObject{ID: id, Type: typeTree, Data: data})
	return id
}

// commitRoot adds to b the root tree, a commit of it on parent (zeroHash:
// none) authored by author, and the compare-and-swap moving ref from
// parent to that commit, which it returns. The zones kept on their own
// refs (knowledge, notebooks) commit through it.
func commitRoot(b *batch, ref string, parent hash, root *object.Tree, message string, author ledger.Author, when time.Time) hash {
	cid := addCommit(b, commitSpec{tree: addTree(b, root), parents: []hash{parent}, message: message, author: &author, when: when})
	b.Updates = append(b.Updates, refUpdate{Name: ref, Old: parent, New: cid})
	return cid
}

// casAttempts bounds how often a write that lost its compare-and-swap to
// another writer is rebuilt on the new tip and tried again.
const casAttempts = 64

// errGaveUp is returned by retryCAS when every attempt lost its
// compare-and-swap; it wraps errConflict.
var errGaveUp = errors.New("kept losing the compare-and-swap")

// retryCAS runs try (attempt 1, 2, …) until it returns anything but
// errConflict, or has lost casAttempts times: then it returns a
// gaveUpError with the attempt count, wrapping errConflict. Between
// attempts it waits ledger.RandomPause. It is ledger.Retry, the one retry
// loop of the ledger and the store, with the store's bound.
func retryCAS(ctx context.Context, try func(attempt int) error) error {
	return ledger.Retry(ctx, casAttempts, ledger.RandomPause, func(attempt int) error {
		err := try(attempt)
		if errors.Is(err, errConflict) {
			return ledger.Again(&gaveUpError{attempts: attempt})
		}
		return err
	})
}

// gaveUpError says after how many attempts retryCAS stopped.
type gaveUpError struct{ attempts int }

func (e *gaveUpError) Error() string { return errGaveUp.Error() }
func (e *gaveUpError) Unwrap() []error {
	return []error{errGaveUp, errConflict}
}
