package ledger

import (
	"context"
	"errors"
	"time"
)

// NotebookStore is the part of a Store that keeps notebooks, each on its own ref refs/heads/notebooks/<id>,
// whose tree holds only notebooks/<id>/... (files relative to that folder:
// "notebook.json", "cells/01-title.md", ...). A ref per notebook keeps the
// history of one notebook apart from the others and from the sessions, so
// `git log refs/heads/notebooks/<id>` reads as the notebook's own journal.
type NotebookStore interface {
	ListNotebooks(ctx context.Context) ([]NotebookHead, error)
	// ReadNotebook returns the folder's files at the ref's tip. ErrNotebookNotFound if no such ref.
	ReadNotebook(ctx context.Context, id string) (files map[string][]byte, tip CommitID, err error)
	// WriteNotebook commits Files as the whole folder (files not listed are removed) in one commit
	// on refs/heads/notebooks/<ID>, moving the ref by compare-and-swap from ExpectedTip ("" = create;
	// ErrConflict if the ref moved or, for a create, exists). Durable when it returns, like a thought.
	WriteNotebook(ctx context.Context, w NotebookWrite) (CommitID, error)
	// DeleteNotebook removes the notebook's ref by compare-and-swap from
	// expectedTip ("" = wherever it is) without losing its history: the
	// notebook leaves listings and reads, and a record kept outside the
	// shared refs still reaches every commit it had. ErrNotebookNotFound if
	// there is no such notebook, ErrConflict if the ref moved.
	DeleteNotebook(ctx context.Context, id string, expectedTip CommitID, author Author, at time.Time) (DeletedNotebook, error)
}

// NotebookHead names one stored notebook and where its ref points.
type NotebookHead struct {
	ID        string
	Tip       CommitID
	UpdatedAt time.Time
}

// NotebookWrite asks the store for one commit replacing a notebook's folder.
type NotebookWrite struct {
	ID          string
	Files       map[string][]byte
	ExpectedTip CommitID
	// Message is the commit message, first line a summary ("Add cell
	// 03-check.ts", "Run cell 03-check.ts: completed").
	Message string
	// Author is the agent (MCP client) or the CLI user.
	Author Author
	When   time.Time
}

// ErrNotebookNotFound is returned when no notebook has the id asked for.
var ErrNotebookNotFound = errors.New("notebook not found")

// NotebookStore returns the ledger's own store as a NotebookStore, so that
// whoever holds a project's ledger reaches that project's notebooks (and no
// other's).
func (l *Ledger) NotebookStore() NotebookStore { return l.store }

// DeletedNotebook says what a delete removed and where its history is kept.
type DeletedNotebook struct {
	ID string `json:"id"`
	// Ref is the ref the notebook had; Tip the commit it pointed at.
	Ref string   `json:"ref"`
	Tip CommitID `json:"tip"`
	// Kept is the ref that keeps the history reachable (a record commit
	// whose first parent is Tip); "" if the store keeps it some other way.
	Kept string `json:"kept,omitempty"`
}
