package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/notebook"
)

// notebookCmd is `thoughtbox notebook …`: the project's notebooks, each
// kept on refs/heads/notebooks/<id>.
type notebookCmd struct {
	Create notebookCreateCmd `cmd:"" help:"Create a notebook from a template and print its id."`
	List   notebookListCmd   `cmd:"" help:"List the notebooks, most recently changed first."`
	Show   notebookShowCmd   `cmd:"" help:"Show a notebook's cells, with the last output of each code cell."`
	Run    notebookRunCmd    `cmd:"" help:"Run a notebook's code cells in order (or up to --cell) and record the outputs as one commit; exit 1 if a cell failed."`
	Export notebookExportCmd `cmd:"" help:"Print a notebook in the .src.md format, or write it to --output."`
	Import notebookImportCmd `cmd:"" help:"Create a notebook from a .src.md file (- reads standard input) and print its id."`
	Cell   notebookCellCmd   `cmd:"" help:"Add, edit or delete one cell of a notebook (one commit each)."`
	Delete notebookDeleteCmd `cmd:"" help:"Delete a notebook; its history stays in the repository under refs/thoughtbox/deleted/."`
}

type notebookDeleteCmd struct {
	ID string `arg:"" name:"id" help:"Notebook id."`
}

func (c *notebookDeleteCmd) Run(a *app) error {
	return a.notebooks(func(svc *notebook.Service) error {
		d, err := svc.Delete(a.ctx, c.ID, a.author())
		if err != nil {
			return err
		}
		if a.format == FormatJSON {
			return writeJSON(a.env.Stdout, d)
		}
		if d.Kept == "" {
			_, err = fmt.Fprintf(a.env.Stdout, "deleted notebook %s\n", d.ID)
			return err
		}
		fmt.Fprintf(a.env.Stdout, "deleted notebook %s (its history is kept at %s)\n", d.ID, d.Kept)
		fmt.Fprintf(a.env.Stderr, "hint: 'git --git-dir %s update-ref %s %s^' brings it back\n", a.cfg.RepoPath(), d.Ref, d.Kept)
		return nil
	})
}

// notebooks runs fn with the project's notebook service.
func (a *app) notebooks(fn func(svc *notebook.Service) error) error {
	return a.notebooksNamingCell("", fn)
}

// notebooksNamingCell is notebooks for a command that takes a cell:
// cellArg is how that command spells it ("<cell>", "--cell"), so that a
// hint about cellId points at what the user typed.
func (a *app) notebooksNamingCell(cellArg string, fn func(svc *notebook.Service) error) error {
	svc := a.proj.Notebooks()
	defer svc.Close()
	return notebookError(fn(svc), cellArg)
}

// notebookError adds command-line hints to a notebook error; cellArg is
// the command's spelling of the cell ("" if it takes none).
func notebookError(err error, cellArg string) error {
	var e *ledger.Error
	if err == nil || !errors.As(err, &e) || e.Code != ledger.CodeInvalidPayload {
		return err
	}
	flags := map[string]string{"notebookId": "<id>", "cellId": cellArg, "afterCellId": "--after", "content": "<file>"}
	f := &failure{msg: e.Message}
	field, _ := e.Details["field"].(string)
	switch {
	case errors.Is(err, ledger.ErrNotebookNotFound):
		f.hints = append(f.hints, "'thoughtbox notebook list' lists the notebooks")
	case errors.Is(err, notebook.ErrCellNotFound) && flags[field] != "":
		f.hints = append(f.hints, fmt.Sprintf("'thoughtbox notebook show <id>' lists the cells; %s takes a cell's id, filename or 1-based position", flags[field]))
	case errors.Is(err, notebook.ErrCellNotFound):
		f.hints = append(f.hints, "'thoughtbox notebook show <id>' lists the cells; a cell is named by its id, filename or 1-based position")
	case flags[field] != "":
		f.hints = append(f.hints, fmt.Sprintf("%s is given as %s", field, flags[field]))
	}
	return f
}

type notebookCreateCmd struct {
	Name     string `arg:"" name:"name" help:"The notebook's title; its id is made from it."`
	Template string `enum:"blank,sequential-feynman" default:"blank" placeholder:"blank|sequential-feynman" help:"What the notebook starts with: a blank page, or a worked explain-check-refine example."`
	Language string `enum:"typescript,javascript" default:"typescript" placeholder:"typescript|javascript" help:"The language of its code cells."`
}

func (c *notebookCreateCmd) Run(a *app) error {
	return a.notebooks(func(svc *notebook.Service) error {
		nb, err := svc.Create(a.ctx, notebook.CreateRequest{Name: c.Name, Template: c.Template, Language: c.Language, Author: a.author()})
		if err != nil {
			return err
		}
		a.memoryNote()
		if a.format == FormatJSON {
			return writeJSON(a.env.Stdout, nb)
		}
		_, err = fmt.Fprintln(a.env.Stdout, nb.ID)
		return err
	})
}

type notebookListCmd struct{ pageFlags }

func (c *notebookListCmd) Run(a *app) error {
	return a.notebooks(func(svc *notebook.Service) error {
		list, err := svc.List(a.ctx)
		if err != nil {
			return err
		}
		total := len(list)
		from, to := c.cut(total)
		list = list[from:to]
		defer c.more(a.env.Stderr, len(list), total, "notebooks")
		if a.format == FormatJSON {
			if list == nil {
				list = []notebook.Summary{}
			}
			return writeJSON(a.env.Stdout, list)
		}
		if total == 0 {
			fmt.Fprintf(a.env.Stderr, "no notebooks in project %s; 'thoughtbox notebook create <name>' or 'thoughtbox notebook import <file.src.md>' adds one\n", a.cfg.Project)
			return nil
		}
		tw := tabwriter.NewWriter(a.env.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tTITLE\tLANGUAGE\tCELLS\tUPDATED")
		for _, s := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.ID, clip(s.Title, 48), s.Language, s.Cells, stamp(time.UnixMilli(s.UpdatedAt)))
		}
		return tw.Flush()
	})
}

type notebookShowCmd struct {
	ID string `arg:"" name:"id" help:"Notebook id."`
}

func (c *notebookShowCmd) Run(a *app) error {
	return a.notebooks(func(svc *notebook.Service) error {
		nb, err := svc.Load(a.ctx, c.ID)
		if err != nil {
			return err
		}
		if a.format == FormatJSON {
			return writeJSON(a.env.Stdout, nb)
		}
		w := a.env.Stdout
		fmt.Fprintf(w, "%s  %s (%s, %d cells, updated %s)\n", nb.ID, nb.Title(), nb.Language, len(nb.Cells), stamp(time.UnixMilli(nb.UpdatedAt)))
		for i, cell := range nb.Cells {
			head := fmt.Sprintf("[%d] %s", i+1, cell.Type)
			if cell.Filename != "" {
				head += " " + cell.Filename
			}
			if cell.Status != "" {
				head += " (" + string(cell.Status) + ")"
			}
			fmt.Fprintf(w, "\n%s\n", head)
			fmt.Fprintln(w, indent(strings.TrimRight(cell.Content(), "\n"), "    "))
			if cell.Output != nil && *cell.Output != "" {
				fmt.Fprintf(w, "  output:\n%s\n", indent(strings.TrimRight(*cell.Output, "\n"), "    "))
			}
			if cell.Error != nil {
				fmt.Fprintf(w, "  error: %s\n", *cell.Error)
			}
		}
		return nil
	})
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

type notebookRunCmd struct {
	ID   string `arg:"" name:"id" help:"Notebook id."`
	Cell string `placeholder:"CELL" help:"Run only up to this cell (its id, filename or 1-based position); the cells before it run first."`
}

func (c *notebookRunCmd) Run(a *app) error {
	return a.notebooksNamingCell("--cell", func(svc *notebook.Service) error {
		var results []notebook.RunResult
		if c.Cell != "" {
			r, err := svc.RunCell(a.ctx, c.ID, c.Cell, a.author())
			if err != nil {
				return err
			}
			results = []notebook.RunResult{r}
		} else {
			var err error
			if results, err = svc.RunAll(a.ctx, c.ID, a.author()); err != nil {
				return err
			}
		}
		a.memoryNote()
		failed := 0
		for _, r := range results {
			if r.Status == notebook.StatusFailed {
				failed++
			}
		}
		if a.format == FormatJSON {
			if results == nil {
				results = []notebook.RunResult{}
			}
			if err := writeJSON(a.env.Stdout, results); err != nil {
				return err
			}
		} else {
			for _, r := range results {
				fmt.Fprintf(a.env.Stdout, "== %s: %s (%d ms)\n", r.Filename, r.Status, r.DurationMs)
				if r.Output != "" {
					fmt.Fprint(a.env.Stdout, r.Output)
					if !strings.HasSuffix(r.Output, "\n") {
						fmt.Fprintln(a.env.Stdout)
					}
				}
				if r.Error != nil {
					fmt.Fprintf(a.env.Stdout, "error: %s\n", *r.Error)
				}
			}
			if len(results) == 0 {
				fmt.Fprintf(a.env.Stderr, "notebook %s has no code cells to run\n", c.ID)
			}
		}
		if failed > 0 {
			return &failure{msg: fmt.Sprintf("%s of notebook %s failed", plural(failed, "cell", "cells"), c.ID),
				hints: []string{"the outputs and errors are recorded; 'thoughtbox notebook show " + c.ID + "' shows them"}}
		}
		return nil
	})
}

type notebookExportCmd struct {
	ID     string `arg:"" name:"id" help:"Notebook id."`
	Output string `short:"o" placeholder:"FILE" help:"Write the .src.md text to FILE instead of standard output."`
}

func (c *notebookExportCmd) Run(a *app) error {
	return a.notebooks(func(svc *notebook.Service) error {
		text, err := svc.Export(a.ctx, c.ID)
		if err != nil {
			return err
		}
		if c.Output == "" || c.Output == "-" {
			_, err := io.WriteString(a.env.Stdout, text)
			return err
		}
		if err := os.WriteFile(c.Output, []byte(text), 0o644); err != nil {
			return &failure{msg: fmt.Sprintf("write %s: %v", c.Output, errors.Unwrap(err))}
		}
		fmt.Fprintf(a.env.Stderr, "notebook %s written to %s\n", c.ID, c.Output)
		return nil
	})
}

// notebookCellCmd is `thoughtbox notebook cell add|edit|delete`: the
// command line's way to the gateway's add_cell, update_cell and delete_cell.
type notebookCellCmd struct {
	Add    notebookCellAddCmd    `cmd:"" help:"Add a cell, after --after or at the end, from a file (- reads standard input), and print its id."`
	Edit   notebookCellEditCmd   `cmd:"" help:"Replace a cell's content with a file's (- reads standard input)."`
	Delete notebookCellDeleteCmd `cmd:"" help:"Delete a cell."`
}

type notebookCellAddCmd struct {
	Notebook string `arg:"" name:"id" help:"The notebook."`
	File     string `arg:"" name:"file" help:"The cell's content: a file, or - for standard input."`
	Type     string `enum:"code,markdown,title,package.json" default:"code" placeholder:"code|markdown|title|package.json" help:"The kind of cell."`
	After    string `placeholder:"CELL" help:"Put the cell after this one (its id, filename or position); default: at the end."`
	Filename string `placeholder:"NAME" help:"A code cell's module name (check.ts); default: one is picked."`
}

func (c *notebookCellAddCmd) Run(a *app) error {
	content, err := a.readContent(c.File)
	if err != nil {
		return err
	}
	return a.notebooks(func(svc *notebook.Service) error {
		_, cell, err := svc.AddCell(a.ctx, notebook.AddCellRequest{NotebookID: c.Notebook, Type: c.Type, Content: content,
			Filename: c.Filename, AfterCellID: c.After, Author: a.author()})
		if err != nil {
			return err
		}
		return a.printCell(cell, "added")
	})
}

type notebookCellEditCmd struct {
	Notebook string `arg:"" name:"id" help:"The notebook."`
	Cell     string `arg:"" name:"cell" help:"The cell: its id, filename or 1-based position."`
	File     string `arg:"" name:"file" help:"The new content: a file, or - for standard input."`
}

func (c *notebookCellEditCmd) Run(a *app) error {
	content, err := a.readContent(c.File)
	if err != nil {
		return err
	}
	return a.notebooksNamingCell("<cell>", func(svc *notebook.Service) error {
		_, cell, err := svc.UpdateCell(a.ctx, notebook.UpdateCellRequest{NotebookID: c.Notebook, CellID: c.Cell, Content: content, Author: a.author()})
		if err != nil {
			return err
		}
		return a.printCell(cell, "updated")
	})
}

type notebookCellDeleteCmd struct {
	Notebook string `arg:"" name:"id" help:"The notebook."`
	Cell     string `arg:"" name:"cell" help:"The cell: its id, filename or 1-based position."`
}

func (c *notebookCellDeleteCmd) Run(a *app) error {
	return a.notebooksNamingCell("<cell>", func(svc *notebook.Service) error {
		cell, err := svc.Cell(a.ctx, c.Notebook, c.Cell)
		if err != nil {
			return err
		}
		if _, err := svc.DeleteCell(a.ctx, c.Notebook, c.Cell, a.author()); err != nil {
			return err
		}
		return a.printCell(cell, "deleted")
	})
}

// printCell reports what a cell command did: the cell as JSON, or its id
// (and filename) and the verb.
func (a *app) printCell(cell notebook.Cell, verb string) error {
	a.memoryNote()
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, cell)
	}
	name := cell.ID
	if cell.Filename != "" {
		name += " (" + cell.Filename + ")"
	}
	_, err := fmt.Fprintf(a.env.Stdout, "cell %s %s\n", name, verb)
	return err
}

// readContent reads a command's input: a file, or standard input for "-".
func (a *app) readContent(file string) (string, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(a.env.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return "", &failure{msg: fmt.Sprintf("read %s: %v", filepath.Base(file), err)}
	}
	return string(data), nil
}

type notebookImportCmd struct {
	File string `arg:"" name:"file" help:"A .src.md file; - reads standard input."`
}

func (c *notebookImportCmd) Run(a *app) error {
	data, err := a.readContent(c.File)
	if err != nil {
		return err
	}
	return a.notebooks(func(svc *notebook.Service) error {
		nb, err := svc.Import(a.ctx, data, a.author())
		if err != nil {
			return err
		}
		a.memoryNote()
		if a.format == FormatJSON {
			return writeJSON(a.env.Stdout, nb)
		}
		_, err = fmt.Fprintln(a.env.Stdout, nb.ID)
		return err
	})
}
