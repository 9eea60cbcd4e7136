package gateway

// The notebook operation (seed 000, "Notebook Tool"; seed 002, "Notebook
// Types"): literate JavaScript and TypeScript notebooks, each kept on its
// own ref of the project's repository by the notebook package, which also
// runs their code in the sandbox.

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/notebook"
)

var notebookOps = []subOp{
	sub("create", onNotebooks(notebookCreate)).writing(),
	sub("list", onNotebooks(notebookList)),
	sub("load", onNotebooks(notebookLoad)),
	sub("list_cells", onNotebooks(notebookListCells)),
	sub("get_cell", onNotebooks(notebookGetCell)),
	sub("add_cell", onNotebooks(notebookAddCell)).writing(),
	sub("update_cell", onNotebooks(notebookUpdateCell)).writing(),
	sub("delete_cell", onNotebooks(notebookDeleteCell)).writing(),
	sub("run_cell", onNotebooks(notebookRunCell)).writing(),
	sub("run_all", onNotebooks(notebookRunAll)).writing(),
	sub("install_deps", onNotebooks(notebookInstallDeps)).writing(),
	sub("export", onNotebooks(notebookExport)),
	sub("import", onNotebooks(notebookImport)).writing(),
	sub("delete", onNotebooks(notebookDelete)).writing(),
}

const (
	notebookArgsNote = "run_cell replies {output, error, status, durationMs}; install_deps installs npm packages without running their scripts;" +
		" export replies with .src.md text, which import takes; delete removes a notebook and keeps its history on the ref it replies as kept; cellId may be the cell's id, its filename or its 1-based position"
	notebookSummary = "literate JavaScript/TypeScript notebooks: prose and code cells run in a sandbox; each change is a commit on refs/heads/notebooks/<id>"
)

const notebookToolDescription = "Literate JavaScript/TypeScript notebooks kept in the ledger: create one (template blank or sequential-feynman), add markdown and code cells, run_cell to execute code in a sandbox (console.log is the output; later cells import earlier ones by filename), install_deps for npm packages, export/import the .src.md format. " +
	"Same arguments as the gateway's notebook operation: {\"operation\": \"run_cell\", \"notebookId\": \"...\", \"cellId\": \"check.ts\"}. Each change is a Git commit on refs/heads/notebooks/<id>."

// notebookOp runs a notebook sub-operation on the connection's project.
func notebookOp(ctx context.Context, c *call) (any, error) {
	return runSubOp(ctx, c)
}

// onNotebooks is typed for a notebook sub-operation: it hands fn the
// service of the connection's project, so no handler fetches it itself.
func onNotebooks[P any](fn func(ctx context.Context, c *call, svc *notebook.Service, p *P) (any, error)) func(context.Context, *call, *P) (any, error) {
	return func(ctx context.Context, c *call, p *P) (any, error) {
		svc, err := c.notebooks()
		if err != nil {
			return nil, err
		}
		return fn(ctx, c, svc, p)
	}
}

// notebooks is the notebook service of the connection's project: one per
// project and store, made on first use and kept until Close.
func (c *call) notebooks() (*notebook.Service, error) {
	newService := c.g.opts.Notebooks
	if newService == nil {
		return nil, ledger.Errorf(ledger.CodeInvalidOperation, "notebooks are not configured on this server")
	}
	store := c.ledger.NotebookStore()
	g := c.g
	g.nbMu.Lock()
	defer g.nbMu.Unlock()
	if g.nbs == nil {
		g.nbs = map[string]*projectNotebooks{}
	}
	if pn := g.nbs[c.project]; pn != nil && pn.store == store {
		return pn.svc, nil
	} else if pn != nil {
		// The project was closed and opened again: its old store is gone.
		pn.svc.Close()
	}
	svc := newService(c.project, store)
	g.nbs[c.project] = &projectNotebooks{store: store, svc: svc}
	return svc, nil
}

// projectNotebooks is the notebook service made for a project's store.
type projectNotebooks struct {
	store ledger.NotebookStore
	svc   *notebook.Service
}

// Close releases what the gateway holds for notebooks (the temporary work
// folders of memory storage). Call it once the server has stopped.
func (g *Gateway) Close() error {
	g.nbMu.Lock()
	defer g.nbMu.Unlock()
	var first error
	for p, pn := range g.nbs {
		if err := pn.svc.Close(); err != nil && first == nil {
			first = err
		}
		delete(g.nbs, p)
	}
	return first
}

type notebookIDArgs struct {
	NotebookID string `json:"notebookId"`
}

func (p *notebookIDArgs) check() error { return required("notebookId", p.NotebookID) }

// cellRef names a cell: its id, its filename or its 1-based position,
// which a client may send as a number (2) or as a string ("2").
type cellRef string

// cellRefType is the type decodeError names as a cell reference.
var cellRefType = reflect.TypeFor[cellRef]()

func (r *cellRef) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*r = cellRef(s)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil || n < 1 {
		return &json.UnmarshalTypeError{Value: jsonKind(b) + " " + string(b), Type: cellRefType}
	}
	*r = cellRef(strconv.FormatInt(n, 10))
	return nil
}

type notebookCellArgs struct {
	NotebookID string  `json:"notebookId"`
	CellID     cellRef `json:"cellId" jsonschema:"A cell's id, filename (check.ts) or 1-based position."`
}

func (p *notebookCellArgs) check() error {
	if err := required("notebookId", p.NotebookID); err != nil {
		return err
	}
	return required("cellId", string(p.CellID))
}

func required(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return ledger.InvalidField(field, "is required")
	}
	return nil
}

type notebookCreateArgs struct {
	Name     string `json:"name" jsonschema:"The notebook's title, for create; its id is made from it."`
	Template string `json:"template,omitempty" jsonschema:"For create (default blank)." schema:"enum=blank|sequential-feynman"`
	Language string `json:"language,omitempty" jsonschema:"For create (default typescript)." schema:"enum=typescript|javascript"`
}

func (p *notebookCreateArgs) check() error {
	if err := required("name", p.Name); err != nil {
		return err
	}
	switch p.Template {
	case "", "blank", "sequential-feynman":
	default:
		e := ledger.InvalidField("template", "must be blank or sequential-feynman, got %q", p.Template)
		e.Details["expected"] = []string{"blank", "sequential-feynman"}
		return e
	}
	return nil
}

// notebookReply is a notebook as load and the changes return it: seed
// 002's Notebook with its title and the commit that holds it.
type notebookReply struct {
	Notebook *notebook.Notebook `json:"notebook"`
	Title    string             `json:"title"`
	Ref      string             `json:"ref"`
	Message  string             `json:"message,omitempty"`
}

func replyNotebook(nb *notebook.Notebook, msg string) *notebookReply {
	return &notebookReply{Notebook: nb, Title: nb.Title(), Ref: "refs/heads/notebooks/" + nb.ID, Message: msg}
}

func notebookCreate(ctx context.Context, c *call, svc *notebook.Service, p *notebookCreateArgs) (any, error) {
	nb, err := svc.Create(ctx, notebook.CreateRequest{Name: p.Name, Template: p.Template, Language: p.Language, Author: c.author()})
	if err != nil {
		return nil, err
	}
	return replyNotebook(nb, fmt.Sprintf("Notebook %s created with %d cells. Run a code cell with run_cell {notebookId: %q, cellId}.", nb.ID, len(nb.Cells), nb.ID)), nil
}

type notebookListReply struct {
	Notebooks []notebook.Summary `json:"notebooks"`
	pageInfo
}

func notebookList(ctx context.Context, c *call, svc *notebook.Service, p *pageArgs) (any, error) {
	list, err := svc.List(ctx)
	if err != nil {
		return nil, err
	}
	page, info := pageOf(list, *p, "notebook list")
	if page == nil {
		page = []notebook.Summary{}
	}
	return &notebookListReply{Notebooks: page, pageInfo: info}, nil
}

func notebookLoad(ctx context.Context, c *call, svc *notebook.Service, p *notebookIDArgs) (any, error) {
	nb, err := svc.Load(ctx, p.NotebookID)
	if err != nil {
		return nil, err
	}
	return replyNotebook(nb, ""), nil
}

// cellLine is a cell as list_cells shows it: enough to pick one without
// reading every cell's text.
type cellLine struct {
	Position int                 `json:"position"`
	ID       string              `json:"id"`
	Type     notebook.CellType   `json:"type"`
	Filename string              `json:"filename,omitempty"`
	Status   notebook.CellStatus `json:"status,omitempty"`
	Preview  string              `json:"preview"`
}

func notebookListCells(ctx context.Context, c *call, svc *notebook.Service, p *notebookIDArgs) (any, error) {
	nb, err := svc.Load(ctx, p.NotebookID)
	if err != nil {
		return nil, err
	}
	cells := make([]cellLine, len(nb.Cells))
	for i, cell := range nb.Cells {
		cells[i] = cellLine{Position: i + 1, ID: cell.ID, Type: cell.Type, Filename: cell.Filename, Status: cell.Status, Preview: preview(cell.Content(), 80)}
	}
	return map[string]any{"notebookId": nb.ID, "cells": cells}, nil
}

// preview is the first non-blank line of s, cut to n runes.
func preview(s string, n int) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if r := []rune(line); len(r) > n {
				return string(r[:n-1]) + "…"
			}
			return line
		}
	}
	return ""
}

func notebookGetCell(ctx context.Context, c *call, svc *notebook.Service, p *notebookCellArgs) (any, error) {
	cell, err := svc.Cell(ctx, p.NotebookID, string(p.CellID))
	if err != nil {
		return nil, err
	}
	return map[string]any{"notebookId": p.NotebookID, "cell": cell}, nil
}

type notebookAddCellArgs struct {
	NotebookID  string  `json:"notebookId"`
	Type        string  `json:"type" jsonschema:"For add_cell." schema:"enum=title|markdown|code|package.json"`
	Content     *string `json:"content" jsonschema:"The cell's text (add_cell, update_cell), or a .src.md document (import)." schema:"note=may be empty"`
	AfterCellID cellRef `json:"afterCellId,omitempty" jsonschema:"For add_cell: place the new cell after this one (default: at the end)."`
	Filename    string  `json:"filename,omitempty" jsonschema:"For add_cell of code: the module name (check.ts); one is picked if absent."`
}

func (p *notebookAddCellArgs) check() error {
	if err := required("notebookId", p.NotebookID); err != nil {
		return err
	}
	if err := required("type", p.Type); err != nil {
		return err
	}
	if p.Content == nil {
		return ledger.InvalidField("content", "is required (it may be empty)")
	}
	return nil
}

// cellReply is a cell a change made or changed, with where it now stands.
type cellReply struct {
	NotebookID string        `json:"notebookId"`
	Cell       notebook.Cell `json:"cell"`
	Position   int           `json:"position"`
	Cells      int           `json:"cells"`
}

func replyCell(nb *notebook.Notebook, cell notebook.Cell) *cellReply {
	r := &cellReply{NotebookID: nb.ID, Cell: cell, Cells: len(nb.Cells)}
	for i, x := range nb.Cells {
		if x.ID == cell.ID {
			r.Position = i + 1
		}
	}
	return r
}

func notebookAddCell(ctx context.Context, c *call, svc *notebook.Service, p *notebookAddCellArgs) (any, error) {
	nb, cell, err := svc.AddCell(ctx, notebook.AddCellRequest{NotebookID: p.NotebookID, Type: p.Type, Content: *p.Content,
		Filename: p.Filename, AfterCellID: string(p.AfterCellID), Author: c.author()})
	if err != nil {
		return nil, err
	}
	return replyCell(nb, cell), nil
}

type notebookUpdateCellArgs struct {
	NotebookID string  `json:"notebookId"`
	CellID     cellRef `json:"cellId"`
	Content    *string `json:"content"`
}

func (p *notebookUpdateCellArgs) check() error {
	if err := required("notebookId", p.NotebookID); err != nil {
		return err
	}
	if err := required("cellId", string(p.CellID)); err != nil {
		return err
	}
	if p.Content == nil {
		return ledger.InvalidField("content", "is required (it may be empty)")
	}
	return nil
}

func notebookUpdateCell(ctx context.Context, c *call, svc *notebook.Service, p *notebookUpdateCellArgs) (any, error) {
	nb, cell, err := svc.UpdateCell(ctx, notebook.UpdateCellRequest{NotebookID: p.NotebookID, CellID: string(p.CellID), Content: *p.Content, Author: c.author()})
	if err != nil {
		return nil, err
	}
	return replyCell(nb, cell), nil
}

func notebookDeleteCell(ctx context.Context, c *call, svc *notebook.Service, p *notebookCellArgs) (any, error) {
	nb, err := svc.DeleteCell(ctx, p.NotebookID, string(p.CellID), c.author())
	if err != nil {
		return nil, err
	}
	return map[string]any{"notebookId": nb.ID, "deleted": p.CellID, "cells": len(nb.Cells)}, nil
}

// notebookDelete removes a notebook; the reply names the ref that keeps
// its history, so the model can tell the user where it went.
func notebookDelete(ctx context.Context, c *call, svc *notebook.Service, p *notebookIDArgs) (any, error) {
	d, err := svc.Delete(ctx, p.NotebookID, c.author())
	if err != nil {
		return nil, err
	}
	return map[string]any{"notebookId": d.ID, "deleted": true, "ref": d.Ref, "tip": d.Tip, "kept": d.Kept}, nil
}

func notebookRunCell(ctx context.Context, c *call, svc *notebook.Service, p *notebookCellArgs) (any, error) {
	return svc.RunCell(ctx, p.NotebookID, string(p.CellID), c.author())
}

func notebookRunAll(ctx context.Context, c *call, svc *notebook.Service, p *notebookIDArgs) (any, error) {
	res, err := svc.RunAll(ctx, p.NotebookID, c.author())
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = []notebook.RunResult{}
	}
	// Which cells ran and which did not, and why, at a glance.
	ran, skipped := []string{}, []map[string]string{}
	for _, r := range res {
		if r.Skipped != "" {
			skipped = append(skipped, map[string]string{"cell": r.Filename, "reason": r.Skipped})
		} else {
			ran = append(ran, r.Filename)
		}
	}
	return map[string]any{"notebookId": p.NotebookID, "results": res, "ran": ran, "skipped": skipped}, nil
}

type notebookInstallArgs struct {
	NotebookID string   `json:"notebookId"`
	Packages   []string `json:"packages" jsonschema:"For install_deps: npm package names, optionally @version."`
}

func (p *notebookInstallArgs) check() error {
	if err := required("notebookId", p.NotebookID); err != nil {
		return err
	}
	if len(p.Packages) == 0 {
		e := ledger.InvalidField("packages", "is required: a non-empty array of npm package names")
		e.Details["expected"] = "array of strings"
		return e
	}
	return nil
}

func notebookInstallDeps(ctx context.Context, c *call, svc *notebook.Service, p *notebookInstallArgs) (any, error) {
	return svc.InstallDeps(ctx, p.NotebookID, p.Packages, c.author())
}

func notebookExport(ctx context.Context, c *call, svc *notebook.Service, p *notebookIDArgs) (any, error) {
	text, err := svc.Export(ctx, p.NotebookID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"notebookId": p.NotebookID, "format": "srcmd", "filename": p.NotebookID + ".src.md", "content": text}, nil
}

type notebookImportArgs struct {
	Content string `json:"content" schema:"note=.src.md text"`
}

func (p *notebookImportArgs) check() error {
	if strings.TrimSpace(p.Content) == "" {
		return ledger.InvalidField("content", "is required: the text of a .src.md notebook")
	}
	return nil
}

func notebookImport(ctx context.Context, c *call, svc *notebook.Service, p *notebookImportArgs) (any, error) {
	nb, err := svc.Import(ctx, p.Content, c.author())
	if err != nil {
		return nil, err
	}
	return replyNotebook(nb, fmt.Sprintf("Imported as notebook %s with %d cells.", nb.ID, len(nb.Cells))), nil
}
