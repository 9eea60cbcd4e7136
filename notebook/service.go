package notebook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sandbox"
)

// Defaults for Options.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultMaxOutput = 64 << 10
)

// Options configure a Service. Zero values take the defaults.
type Options struct {
	// WorkDir holds the notebooks' work folders (package.json and
	// node_modules), one per notebook id; "" is a temporary folder,
	// removed by Close.
	WorkDir string
	// Timeout bounds one notebook run, all its cells together
	// (THOUGHTBOX_NOTEBOOK_TIMEOUT; 10s).
	Timeout time.Duration
	// MaxOutput caps what one cell prints, in bytes (64 KiB).
	MaxOutput int
	// Now is the clock of createdAt, updatedAt and the commits (time.Now).
	Now func() time.Time
	// NPM is the npm program; "" looks it up on PATH.
	NPM string
	// Limits bound the sandbox child of a run (the sandbox's defaults).
	Limits sandbox.Limits
	// SpareIdle is how long the spare child kept for the next run may
	// wait for one before it is ended (DefaultSpareIdle): a server that
	// ran one notebook an hour ago should not hold a process for it.
	SpareIdle time.Duration
}

// DefaultSpareIdle is Options.SpareIdle's default.
const DefaultSpareIdle = 2 * time.Minute

// Service is the notebooks of one store. Its methods are safe for
// concurrent use; changes to one notebook are serialised, and each is one
// commit authored by the caller.
type Service struct {
	store ledger.NotebookStore
	opts  Options

	mu    sync.Mutex             // guards locks
	locks map[string]*sync.Mutex // one per notebook id: a change reads, edits and writes under it

	tmpMu  sync.Mutex // guards tmpDir
	tmpDir string

	// spareMu guards the fields below: the spare sandbox child started
	// ahead of the next run (see child).
	spareMu       sync.Mutex
	spare         *sandbox.Session
	spareStarting bool
	closed        bool
	spareWG       sync.WaitGroup // the goroutine starting a spare
}

// NewService returns the notebooks kept in store.
func NewService(store ledger.NotebookStore, opts Options) *Service {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxOutput <= 0 {
		opts.MaxOutput = DefaultMaxOutput
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{store: store, opts: opts, locks: map[string]*sync.Mutex{}}
}

// Close ends the spare sandbox child and removes the temporary work
// folder, if the Service made one.
func (s *Service) Close() error {
	s.spareMu.Lock()
	s.closed = true
	if s.spare != nil {
		s.spare.Close()
		s.spare = nil
	}
	s.spareMu.Unlock()
	s.spareWG.Wait()
	s.tmpMu.Lock()
	defer s.tmpMu.Unlock()
	if s.tmpDir == "" {
		return nil
	}
	err := os.RemoveAll(s.tmpDir)
	s.tmpDir = ""
	return err
}

// ErrCellNotFound is returned (wrapped in an INVALID_PAYLOAD error naming
// cellId) when a notebook has no cell of the id, filename or position
// given.
var ErrCellNotFound = errors.New("cell not found")

// CreateRequest asks for a new notebook.
type CreateRequest struct {
	Name     string // the title; the id is made from it
	Template string // blank (default) or sequential-feynman
	Language string // javascript or typescript (default)
	Author   ledger.Author
}

// AddCellRequest asks for a new cell.
type AddCellRequest struct {
	NotebookID string
	Type       string // title, markdown, code or package.json
	Content    string
	// Filename names a code cell's module ("check.ts"); "" picks one.
	Filename string
	// AfterCellID places the cell after that one; "" appends it.
	AfterCellID string
	Author      ledger.Author
}

// UpdateCellRequest asks to replace a cell's content.
type UpdateCellRequest struct {
	NotebookID, CellID, Content string
	Author                      ledger.Author
}

func (s *Service) lock(id string) func() {
	s.mu.Lock()
	l, ok := s.locks[id]
	if !ok {
		l = &sync.Mutex{}
		s.locks[id] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (s *Service) nowMs() int64 { return s.opts.Now().UnixMilli() }

func notebookNotFound(id string) error {
	return ledger.InvalidField("notebookId", "no notebook %q (%w)", id, ledger.ErrNotebookNotFound)
}

func checkID(id string) error {
	if !ValidID(id) {
		return ledger.InvalidField("notebookId", "expected 1 to 64 of a-z, 0-9 and '-', got %q", id)
	}
	return nil
}

// read loads a notebook and its tip.
func (s *Service) read(ctx context.Context, id string) (*Notebook, ledger.CommitID, error) {
	if err := checkID(id); err != nil {
		return nil, "", err
	}
	files, tip, err := s.store.ReadNotebook(ctx, id)
	if errors.Is(err, ledger.ErrNotebookNotFound) {
		return nil, "", notebookNotFound(id)
	}
	if err != nil {
		return nil, "", ledger.Errorf(ledger.CodeStorage, "reading notebook %q: %w", id, err)
	}
	nb, err := decode(files)
	if err != nil {
		return nil, "", ledger.Errorf(ledger.CodeStorage, "notebook %q is damaged: %v", id, err)
	}
	return nb, tip, nil
}

// maxConflictRetries bounds how often a change is re-applied when another
// process moved the notebook's ref between our read and our write.
const maxConflictRetries = 3

// change applies edit to the notebook's latest version and commits it.
// edit returns the commit message; it may run again on a fresher version
// if another writer got in first, so it must only edit nb.
func (s *Service) change(ctx context.Context, id string, author ledger.Author, edit func(nb *Notebook) (string, error)) (*Notebook, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	defer s.lock(id)()
	for attempt := 1; ; attempt++ {
		nb, tip, err := s.read(ctx, id)
		if err != nil {
			return nil, err
		}
		msg, err := edit(nb)
		if err != nil {
			return nil, err
		}
		nb.UpdatedAt = max(s.nowMs(), nb.UpdatedAt)
		_, err = s.store.WriteNotebook(ctx, ledger.NotebookWrite{ID: id, Files: encode(nb), ExpectedTip: tip, Message: msg, Author: author, When: s.opts.Now()})
		if errors.Is(err, ledger.ErrConflict) && attempt < maxConflictRetries {
			continue
		}
		if err != nil {
			return nil, ledger.Errorf(ledger.CodeStorage, "writing notebook %q: %w", id, err)
		}
		return nb, nil
	}
}

// create stores a new notebook under the first free id made from base.
func (s *Service) create(ctx context.Context, base string, nb *Notebook, author ledger.Author, msg func(id string) string) (*Notebook, error) {
	for n := 1; n <= 100; n++ {
		id := base
		if n > 1 {
			id = fmt.Sprintf("%s-%d", base, n)
		}
		nb.ID = id
		_, err := s.store.WriteNotebook(ctx, ledger.NotebookWrite{ID: id, Files: encode(nb), Message: msg(id), Author: author, When: s.opts.Now()})
		if errors.Is(err, ledger.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, ledger.Errorf(ledger.CodeStorage, "creating notebook %q: %w", id, err)
		}
		return nb, nil
	}
	return nil, ledger.InvalidField("name", "the notebooks %q to %q all exist; choose another name", base, base+"-100")
}

// Create makes a notebook from a template.
func (s *Service) Create(ctx context.Context, req CreateRequest) (*Notebook, error) {
	name := strings.TrimSpace(req.Name)
	if err := checkTitle("name", name); err != nil {
		return nil, err
	}
	lang, err := ParseLanguage(req.Language)
	if err != nil {
		return nil, ledger.InvalidField("language", "%v", err)
	}
	tmpl := req.Template
	if tmpl == "" {
		tmpl = TemplateBlank
	}
	cells, err := templateCells(tmpl, name, lang)
	if err != nil {
		return nil, err
	}
	now := s.nowMs()
	nb := &Notebook{Cells: cells, Language: lang, CreatedAt: now, UpdatedAt: now}
	for i := range nb.Cells {
		nb.Cells[i].ID = newCellID()
	}
	return s.create(ctx, slug(name), nb, req.Author, func(id string) string {
		return fmt.Sprintf("Create notebook %s from template %s (%s)", id, tmpl, lang)
	})
}

func checkTitle(field, t string) error {
	switch {
	case t == "":
		return ledger.InvalidField(field, "expected a non-empty title")
	case strings.ContainsAny(t, "\r\n"):
		return ledger.InvalidField(field, "expected one line, got %d", strings.Count(t, "\n")+1)
	case len(t) > 200:
		return ledger.InvalidField(field, "expected at most 200 bytes, got %d", len(t))
	}
	return nil
}

func newCellID() string { return uuid.NewString() }

// List returns every notebook, most recently changed first.
func (s *Service) List(ctx context.Context) ([]Summary, error) {
	heads, err := s.store.ListNotebooks(ctx)
	if err != nil {
		return nil, ledger.Errorf(ledger.CodeStorage, "listing notebooks: %w", err)
	}
	out := make([]Summary, 0, len(heads))
	for _, h := range heads {
		nb, _, err := s.read(ctx, h.ID)
		if errors.Is(err, ledger.ErrNotebookNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Summary{ID: nb.ID, Title: nb.Title(), Language: nb.Language, Cells: len(nb.Cells), UpdatedAt: nb.UpdatedAt})
	}
	sortSummaries(out)
	return out, nil
}

// Load returns a notebook.
func (s *Service) Load(ctx context.Context, id string) (*Notebook, error) {
	nb, _, err := s.read(ctx, id)
	return nb, err
}

// Cell returns one cell of a notebook; cellID may also be the cell's
// filename, its stored name ("03-check.ts") or its 1-based position.
func (s *Service) Cell(ctx context.Context, id, cellID string) (Cell, error) {
	nb, err := s.Load(ctx, id)
	if err != nil {
		return Cell{}, err
	}
	i, err := findCell(nb, cellID)
	if err != nil {
		return Cell{}, err
	}
	return nb.Cells[i], nil
}

func findCell(nb *Notebook, ref string) (int, error) {
	if ref == "" {
		return -1, ledger.InvalidField("cellId", "expected a cell id, filename or position")
	}
	i := nb.index(ref)
	if i < 0 {
		return -1, ledger.InvalidField("cellId", "notebook %q has no cell %q (%w)", nb.ID, ref, ErrCellNotFound)
	}
	return i, nil
}

// cellName is how commit messages and errors name a cell: its stored
// file's name, "03-check.ts".
func cellName(nb *Notebook, i int) string { return path.Base(cellFile(i, nb.Cells[i])) }

// AddCell adds a cell; seed 000's {type, content} is accepted for every
// type, and stored in the seed-002 fields.
func (s *Service) AddCell(ctx context.Context, req AddCellRequest) (*Notebook, Cell, error) {
	var added Cell
	nb, err := s.change(ctx, req.NotebookID, req.Author, func(nb *Notebook) (string, error) {
		c, err := newCell(nb, req.Type, req.Content, req.Filename)
		if err != nil {
			return "", err
		}
		at := len(nb.Cells)
		if req.AfterCellID != "" {
			i := nb.index(req.AfterCellID)
			if i < 0 {
				return "", ledger.InvalidField("afterCellId", "notebook %q has no cell %q (%w)", nb.ID, req.AfterCellID, ErrCellNotFound)
			}
			at = i + 1
		}
		if c.Type == TitleCell {
			at = 0
		}
		nb.Cells = append(nb.Cells[:at], append([]Cell{c}, nb.Cells[at:]...)...)
		added = c
		return "Add cell " + cellName(nb, at), nil
	})
	if err != nil {
		return nil, Cell{}, err
	}
	return nb, added, nil
}

// newCell checks a new cell's input against the notebook it joins.
func newCell(nb *Notebook, typ, content, filename string) (Cell, error) {
	c := Cell{ID: newCellID(), Type: CellType(typ)}
	switch c.Type {
	case TitleCell:
		if nb.Title() != "" {
			return Cell{}, ledger.InvalidField("type", "the notebook has a title cell already; update it instead")
		}
		if err := checkTitle("content", strings.TrimSpace(content)); err != nil {
			return Cell{}, err
		}
		c.Text = strings.TrimSpace(content)
	case MarkdownCell:
		c.Text = content
	case PackageJSONCell:
		for _, o := range nb.Cells {
			if o.Type == PackageJSONCell {
				return Cell{}, ledger.InvalidField("type", "the notebook has a package.json cell already; update it instead")
			}
		}
		if err := checkManifest(content); err != nil {
			return Cell{}, err
		}
		c.Filename, c.Source, c.Status = "package.json", content, StatusIdle
	case CodeCell:
		if filename == "" {
			filename = freeFilename(nb)
		}
		if err := checkFilename(nb, filename, -1); err != nil {
			return Cell{}, err
		}
		c.Filename, c.Source, c.Status = filename, content, StatusIdle
		c.Language = languageOf(filename)
	default:
		return Cell{}, ledger.InvalidField("type", "expected title, markdown, code or package.json, got %q", typ)
	}
	if len(content) > maxCellBytes {
		return Cell{}, ledger.InvalidField("content", "expected at most %d bytes, got %d", maxCellBytes, len(content))
	}
	return c, nil
}

// maxCellBytes bounds one cell's text: a notebook is read whole on each
// change, and a cell is meant to be read by a person.
const maxCellBytes = 1 << 20

func languageOf(filename string) Language {
	if strings.HasSuffix(filename, ".js") {
		return JavaScript
	}
	return TypeScript
}

// freeFilename picks a code cell's filename: code-N with the notebook's
// extension, N the first number no cell uses.
func freeFilename(nb *Notebook) string {
	taken := make(map[string]bool, len(nb.Cells))
	for _, c := range nb.Cells {
		taken[c.Filename] = true
	}
	for n := 1; ; n++ {
		name := "code-" + strconv.Itoa(n) + nb.Language.ext()
		if !taken[name] {
			return name
		}
	}
}

// checkFilename checks a code cell's filename; self is the cell's own
// position when it is being renamed (-1 for a new cell).
func checkFilename(nb *Notebook, name string, self int) error {
	if !filenamePattern.MatchString(name) {
		return ledger.InvalidField("filename", "expected a module name like helpers.ts or check.js (letters, digits, '_', '-', '.'; ending .ts or .js), got %q", name)
	}
	for i, c := range nb.Cells {
		if i != self && c.Filename == name {
			return ledger.InvalidField("filename", "cell %s is named %q already", cellName(nb, i), name)
		}
	}
	return nil
}

// UpdateCell replaces a cell's content. A code cell goes back to idle: its
// last output was for other code.
func (s *Service) UpdateCell(ctx context.Context, req UpdateCellRequest) (*Notebook, Cell, error) {
	var updated Cell
	nb, err := s.change(ctx, req.NotebookID, req.Author, func(nb *Notebook) (string, error) {
		i, err := findCell(nb, req.CellID)
		if err != nil {
			return "", err
		}
		if len(req.Content) > maxCellBytes {
			return "", ledger.InvalidField("content", "expected at most %d bytes, got %d", maxCellBytes, len(req.Content))
		}
		c := &nb.Cells[i]
		switch c.Type {
		case TitleCell:
			t := strings.TrimSpace(req.Content)
			if err := checkTitle("content", t); err != nil {
				return "", err
			}
			c.Text = t
		case MarkdownCell:
			c.Text = req.Content
		case PackageJSONCell:
			if err := checkManifest(req.Content); err != nil {
				return "", err
			}
			c.Source = req.Content
		default:
			c.Source = req.Content
		}
		if c.runnable() {
			c.Status, c.Output, c.Error = StatusIdle, nil, nil
		}
		updated = *c
		return "Update cell " + cellName(nb, i), nil
	})
	if err != nil {
		return nil, Cell{}, err
	}
	return nb, updated, nil
}

// DeleteCell removes a cell.
func (s *Service) DeleteCell(ctx context.Context, notebookID, cellID string, author ledger.Author) (*Notebook, error) {
	return s.change(ctx, notebookID, author, func(nb *Notebook) (string, error) {
		i, err := findCell(nb, cellID)
		if err != nil {
			return "", err
		}
		name := cellName(nb, i)
		nb.Cells = append(nb.Cells[:i], nb.Cells[i+1:]...)
		return "Delete cell " + name, nil
	})
}

// Delete removes a notebook from the store, which keeps its history where
// plain git still reads it (DeletedNotebook.Kept).
func (s *Service) Delete(ctx context.Context, id string, author ledger.Author) (ledger.DeletedNotebook, error) {
	if err := checkID(id); err != nil {
		return ledger.DeletedNotebook{}, err
	}
	defer s.lock(id)()
	for attempt := 1; ; attempt++ {
		d, err := s.store.DeleteNotebook(ctx, id, "", author, s.opts.Now())
		switch {
		case errors.Is(err, ledger.ErrNotebookNotFound):
			return ledger.DeletedNotebook{}, notebookNotFound(id)
		case errors.Is(err, ledger.ErrConflict) && attempt < maxConflictRetries:
			continue
		case err != nil:
			return ledger.DeletedNotebook{}, ledger.Errorf(ledger.CodeStorage, "deleting notebook %q: %w", id, err)
		}
		return d, nil
	}
}

// workDir is the notebook's work folder (package.json, node_modules),
// made if missing.
func (s *Service) workDir(id string) (string, error) {
	base := s.opts.WorkDir
	if base == "" {
		s.tmpMu.Lock()
		if s.tmpDir == "" {
			d, err := os.MkdirTemp("", "thoughtbox-notebooks-")
			if err != nil {
				s.tmpMu.Unlock()
				return "", ledger.Errorf(ledger.CodeStorage, "making a work folder for notebooks: %w", err)
			}
			s.tmpDir = d
		}
		base = s.tmpDir
		s.tmpMu.Unlock()
	}
	dir, err := filepath.Abs(filepath.Join(base, id))
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil {
		// The module loader compares real paths: resolve links in the
		// folder's own path (a temp dir under a symlinked /tmp) once here.
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return "", ledger.Errorf(ledger.CodeStorage, "notebook %q: making its work folder: %w", id, err)
	}
	return dir, nil
}
