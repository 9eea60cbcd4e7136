package notebook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// The files of a stored notebook, relative to its folder.
const (
	metaFile     = "notebook.json"
	tsconfigFile = "tsconfig.json"
	cellsDir     = "cells/"
)

// storedNotebook is notebook.json: everything but the cells' text, which
// lives in the cell files so that a diff of a cell is a diff of its file.
type storedNotebook struct {
	ID        string       `json:"id"`
	Language  Language     `json:"language"`
	CreatedAt int64        `json:"createdAt"`
	UpdatedAt int64        `json:"updatedAt"`
	Cells     []storedCell `json:"cells"`
}

type storedCell struct {
	ID       string     `json:"id"`
	Type     CellType   `json:"type"`
	File     string     `json:"file"`
	Language Language   `json:"language,omitempty"`
	Filename string     `json:"filename,omitempty"`
	Status   CellStatus `json:"status,omitempty"`
	Output   *string    `json:"output,omitempty"`
	Error    *string    `json:"error,omitempty"`
}

// cellFile is where cell c, at position i, is stored: cells/NN-<name>.
func cellFile(i int, c Cell) string {
	var name string
	switch c.Type {
	case TitleCell:
		name = "title.md"
	case MarkdownCell:
		name = "markdown.md"
	case PackageJSONCell:
		name = "package.json"
	default:
		name = c.Filename
	}
	return fmt.Sprintf("%s%02d-%s", cellsDir, i+1, name)
}

// encode turns a notebook into the files of its folder.
func encode(nb *Notebook) map[string][]byte {
	files := make(map[string][]byte, len(nb.Cells)+2)
	meta := storedNotebook{ID: nb.ID, Language: nb.Language, CreatedAt: nb.CreatedAt, UpdatedAt: nb.UpdatedAt, Cells: make([]storedCell, len(nb.Cells))}
	for i, c := range nb.Cells {
		f := cellFile(i, c)
		meta.Cells[i] = storedCell{ID: c.ID, Type: c.Type, File: f}
		if c.runnable() {
			sc := &meta.Cells[i]
			sc.Filename, sc.Status, sc.Output, sc.Error = c.Filename, c.Status, c.Output, c.Error
			if c.Type == CodeCell {
				sc.Language = c.Language
			}
		}
		files[f] = []byte(c.Content())
	}
	b, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("notebook: encoding notebook.json: %v", err)) // only strings and numbers: cannot fail
	}
	files[metaFile] = append(b, '\n')
	if nb.TSConfig != nil {
		files[tsconfigFile] = []byte(*nb.TSConfig)
	}
	return files
}

// decode reads a notebook back from its folder's files; it is the inverse
// of encode, and says which file is wrong when one is.
func decode(files map[string][]byte) (*Notebook, error) {
	raw, ok := files[metaFile]
	if !ok {
		return nil, fmt.Errorf("%s is missing", metaFile)
	}
	var meta storedNotebook
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&meta); err != nil {
		return nil, fmt.Errorf("%s: %v", metaFile, err)
	}
	nb := &Notebook{ID: meta.ID, Language: meta.Language, CreatedAt: meta.CreatedAt, UpdatedAt: meta.UpdatedAt, Cells: make([]Cell, len(meta.Cells))}
	if ts, ok := files[tsconfigFile]; ok {
		s := string(ts)
		nb.TSConfig = &s
	}
	for i, sc := range meta.Cells {
		if want := cellFile(i, Cell{Type: sc.Type, Filename: sc.Filename}); sc.File != want {
			return nil, fmt.Errorf("%s: cell %d: file %q, expected %q", metaFile, i+1, sc.File, want)
		}
		text, ok := files[sc.File]
		if !ok {
			return nil, fmt.Errorf("%s is missing", sc.File)
		}
		c := Cell{ID: sc.ID, Type: sc.Type, Language: sc.Language, Filename: sc.Filename, Status: sc.Status, Output: sc.Output, Error: sc.Error}
		switch sc.Type {
		case TitleCell, MarkdownCell:
			c.Text = string(text)
		case CodeCell, PackageJSONCell:
			c.Source = string(text)
		default:
			return nil, fmt.Errorf("%s: cell %d: unknown type %q", metaFile, i+1, sc.Type)
		}
		nb.Cells[i] = c
	}
	// A file nothing refers to would be dropped by the next write: refuse
	// to read such a folder rather than lose it silently.
	referenced := make(map[string]bool, len(meta.Cells))
	for _, sc := range meta.Cells {
		referenced[sc.File] = true
	}
	for name := range files {
		if name == metaFile || name == tsconfigFile || referenced[name] {
			continue
		}
		if strings.HasPrefix(name, cellsDir) && path.Dir(name) == "cells" {
			return nil, fmt.Errorf("%s is not a cell of %s", name, metaFile)
		}
		return nil, fmt.Errorf("unexpected file %q in the notebook's folder", name)
	}
	return nb, nil
}
