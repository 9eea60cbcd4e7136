// Package notebook keeps literate JavaScript and TypeScript notebooks in
// the ledger and runs their code cells in the sandbox.
//
// A notebook is the model of seed 002: a title, prose, a package.json and
// code cells, each code cell a module named by its filename. It is stored
// through a ledger.NotebookStore as a folder of files — notebook.json
// (the cell order, statuses and outputs) and one file per cell under
// cells/, holding exactly the cell's text — so that each change is one
// commit and `git diff` shows a cell's edit as an edit of its file.
//
// Code cells run in one sandbox child per run, in order: a cell imports an
// earlier one by its filename (`import {f} from './helpers.ts'`), and
// require() reaches only the packages installed in the notebook's own
// work folder.
//
//	svc := notebook.NewService(store, notebook.Options{WorkDir: dir})
//	nb, _ := svc.Create(ctx, notebook.CreateRequest{Name: "Binary search", Template: "sequential-feynman", Language: "typescript"})
//	res, _ := svc.RunCell(ctx, nb.ID, "check.ts", author)
package notebook

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Language is the language of a notebook's code cells.
type Language string

// The languages of seed 002.
const (
	JavaScript Language = "javascript"
	TypeScript Language = "typescript"
)

// ParseLanguage checks a language name; "" is TypeScript, and "js"/"ts"
// are accepted as the short names.
func ParseLanguage(s string) (Language, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "typescript", "ts":
		return TypeScript, nil
	case "javascript", "js":
		return JavaScript, nil
	}
	return "", fmt.Errorf("expected javascript or typescript, got %q", s)
}

func (l Language) ext() string {
	if l == JavaScript {
		return ".js"
	}
	return ".ts"
}

// CellType discriminates the cell union of seed 002.
type CellType string

// The cell types of seed 002.
const (
	TitleCell       CellType = "title"
	MarkdownCell    CellType = "markdown"
	PackageJSONCell CellType = "package.json"
	CodeCell        CellType = "code"
)

// CellStatus is where a runnable cell stands.
type CellStatus string

// The statuses of seed 002.
const (
	StatusIdle      CellStatus = "idle"
	StatusRunning   CellStatus = "running"
	StatusCompleted CellStatus = "completed"
	StatusFailed    CellStatus = "failed"
)

// Cell is one cell of a notebook: the union of seed 002's TitleCell,
// MarkdownCell, PackageJsonCell and CodeCell, told apart by Type. Its JSON
// form has only the fields of its type.
type Cell struct {
	ID   string
	Type CellType
	// Text is a title's or a markdown cell's text.
	Text string
	// Language, Filename and Source are a code cell's (Filename and Source
	// also a package.json cell's, whose Filename is "package.json").
	Language Language
	Filename string
	Source   string
	// Status, Output and Error are the last run's, for code and
	// package.json cells; Output and Error are nil until there is one.
	Status CellStatus
	Output *string
	Error  *string
}

// Content is the cell's text: Text or Source, whichever its type has
// (seed 000's "content").
func (c Cell) Content() string {
	if c.Type == TitleCell || c.Type == MarkdownCell {
		return c.Text
	}
	return c.Source
}

func (c Cell) runnable() bool { return c.Type == CodeCell || c.Type == PackageJSONCell }

type cellJSON struct {
	ID       string     `json:"id"`
	Type     CellType   `json:"type"`
	Text     *string    `json:"text,omitempty"`
	Language Language   `json:"language,omitempty"`
	Filename string     `json:"filename,omitempty"`
	Source   *string    `json:"source,omitempty"`
	Status   CellStatus `json:"status,omitempty"`
	Output   *string    `json:"output,omitempty"`
	Error    *string    `json:"error,omitempty"`
	Content  *string    `json:"content,omitempty"`
}

// MarshalJSON writes the seed-002 shape of the cell's type, with seed
// 000's "content" beside it for clients that know only that.
func (c Cell) MarshalJSON() ([]byte, error) {
	j := cellJSON{ID: c.ID, Type: c.Type}
	content := c.Content()
	j.Content = &content
	switch c.Type {
	case TitleCell, MarkdownCell:
		j.Text = &c.Text
	default:
		j.Language, j.Filename, j.Source = c.Language, c.Filename, &c.Source
		j.Status, j.Output, j.Error = c.Status, c.Output, c.Error
		if c.Type == PackageJSONCell {
			j.Language = ""
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the seed-002 shape, or seed 000's {type, content}.
func (c *Cell) UnmarshalJSON(b []byte) error {
	var j cellJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*c = Cell{ID: j.ID, Type: j.Type, Language: j.Language, Filename: j.Filename, Status: j.Status, Output: j.Output, Error: j.Error}
	text := j.Text
	if text == nil {
		text = j.Source
	}
	if text == nil {
		text = j.Content
	}
	if text != nil {
		if c.Type == TitleCell || c.Type == MarkdownCell {
			c.Text = *text
		} else {
			c.Source = *text
		}
	}
	return nil
}

// Notebook is seed 002's Notebook.
type Notebook struct {
	ID       string   `json:"id"`
	Cells    []Cell   `json:"cells"`
	Language Language `json:"language"`
	// TSConfig is a custom tsconfig.json (a JSON text), nil for none.
	TSConfig  *string `json:"tsconfig.json"`
	CreatedAt int64   `json:"createdAt"` // Unix ms
	UpdatedAt int64   `json:"updatedAt"` // Unix ms
}

// Title is the text of the notebook's title cell ("" if it has none).
func (nb *Notebook) Title() string {
	for _, c := range nb.Cells {
		if c.Type == TitleCell {
			return c.Text
		}
	}
	return ""
}

// index returns the position of the cell that ref names: its id, its
// filename ("check.ts"), its stored name ("03-check.ts"), or its 1-based
// position ("3"); -1 if none.
func (nb *Notebook) index(ref string) int {
	for i, c := range nb.Cells {
		if c.ID == ref {
			return i
		}
	}
	for i, c := range nb.Cells {
		if (c.Filename != "" && c.Filename == ref) || path.Base(cellFile(i, c)) == ref {
			return i
		}
	}
	var n int
	if _, err := fmt.Sscanf(ref, "%d", &n); err == nil && fmt.Sprint(n) == ref && n >= 1 && n <= len(nb.Cells) {
		return n - 1
	}
	return -1
}

// Summary is one line of List.
type Summary struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Language  Language `json:"language"`
	Cells     int      `json:"cells"`
	UpdatedAt int64    `json:"updatedAt"` // Unix ms
}

// RunResult is what running one code cell gave: seed 000's {output,
// error} with the status it left and how long it took.
type RunResult struct {
	CellID     string     `json:"cellId"`
	Filename   string     `json:"filename"`
	Output     string     `json:"output"`
	Error      *string    `json:"error"`
	Status     CellStatus `json:"status"`
	DurationMs int64      `json:"durationMs"`
	// Skipped, when set, says why the cell did not run: it imports a cell
	// that failed or was skipped, or the run ended before it. Its stored
	// status is left as it was.
	Skipped string `json:"skipped,omitempty"`
}

// InstallResult is what InstallDeps did.
type InstallResult struct {
	// Installed maps each package asked for to the version npm installed.
	Installed map[string]string `json:"installed"`
	// PackageJSON is the package.json cell's new source.
	PackageJSON string `json:"packageJson"`
	// Output is what npm printed (cut when long).
	Output string `json:"output"`
}

var (
	idPattern       = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	filenamePattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,60}\.(ts|js)$`)
)

// ValidID reports whether id can name a notebook: 1 to 64 of [a-z0-9-].
func ValidID(id string) bool { return idPattern.MatchString(id) }

// slug makes a notebook id from a name: lowercase, runs of anything else
// than [a-z0-9] turned into one '-', at most 56 characters (room for a
// "-NN" suffix).
func slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 56 {
			break
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		s = "notebook"
	}
	return s
}
