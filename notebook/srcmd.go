package notebook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// The .src.md format is Srcbook's: a metadata comment, the title as a
// "# " heading, markdown as it is, and each code cell (and the
// package.json) as a fenced block under a "###### filename" heading.
// Cells are separated by one blank line. Outputs and statuses are not in
// it: it is the notebook's source.
//
// Export is deterministic and Import reads back exactly what Export
// wrote, so export → import → export gives the same bytes.

const srcmdMetaPrefix = "<!-- srcbook:"

// cellBreak separates two markdown cells in a row, which would otherwise
// read back as one. It is an HTML comment: invisible where the Markdown
// is rendered, and plain text to Srcbook.
const cellBreak = "<!-- cell -->"

type srcmdMeta struct {
	Language Language        `json:"language"`
	TSConfig json.RawMessage `json:"tsconfig.json,omitempty"`
}

// ExportText renders a notebook as .src.md.
func ExportText(nb *Notebook) string {
	meta := srcmdMeta{Language: nb.Language}
	if nb.TSConfig != nil {
		// Srcbook keeps the tsconfig as an object; a text that is not
		// JSON travels as a JSON string instead.
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(*nb.TSConfig)) == nil {
			meta.TSConfig = buf.Bytes()
		} else {
			meta.TSConfig, _ = json.Marshal(*nb.TSConfig)
		}
	}
	mb, _ := json.Marshal(meta)
	parts := []string{srcmdMetaPrefix + string(mb) + " -->"}
	for i, c := range nb.Cells {
		switch c.Type {
		case TitleCell:
			parts = append(parts, "# "+c.Text)
		case MarkdownCell:
			// A break keeps the cell apart from a markdown cell before
			// it, and keeps a first cell "# …" from reading as the title.
			if (i > 0 && nb.Cells[i-1].Type == MarkdownCell) || (i == 0 && strings.HasPrefix(c.Text, "# ")) {
				parts = append(parts, cellBreak)
			}
			parts = append(parts, c.Text)
		case PackageJSONCell:
			parts = append(parts, fenced("package.json", "json", c.Source))
		case CodeCell:
			parts = append(parts, fenced(c.Filename, string(c.Language), c.Source))
		}
	}
	return strings.Join(parts, "\n\n") + "\n"
}

// fenced writes a code block with a fence longer than any run of
// backticks in the source, so that the source cannot close it.
func fenced(filename, info, src string) string {
	longest, run := 0, 0
	for _, r := range src {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return "###### " + filename + "\n\n" + fence + info + "\n" + src + "\n" + fence
}

// ParseText reads .src.md into a notebook without ids or times.
func ParseText(text string) (*Notebook, error) {
	text = strings.TrimSuffix(text, "\n")
	nb := &Notebook{Language: TypeScript}
	lines := strings.Split(text, "\n")
	i := 0
	if len(lines) > 0 && strings.HasPrefix(lines[0], srcmdMetaPrefix) && strings.HasSuffix(lines[0], " -->") {
		var meta srcmdMeta
		raw := strings.TrimSuffix(strings.TrimPrefix(lines[0], srcmdMetaPrefix), " -->")
		if err := json.Unmarshal([]byte(raw), &meta); err != nil {
			return nil, fmt.Errorf("line 1: the srcbook metadata is not JSON: %v", err)
		}
		lang, err := ParseLanguage(string(meta.Language))
		if err != nil {
			return nil, fmt.Errorf("line 1: language: %v", err)
		}
		nb.Language = lang
		if len(meta.TSConfig) > 0 {
			var s string
			if json.Unmarshal(meta.TSConfig, &s) != nil {
				s = string(meta.TSConfig)
			}
			nb.TSConfig = &s
		}
		i = 1
		if i < len(lines) && lines[i] == "" {
			i++
		}
	}
	// md collects the lines of a markdown cell until the next title or
	// code block; the blank line that separates cells is not part of it.
	var md []string
	flush := func(atEnd bool) {
		if md == nil {
			return
		}
		if n := len(md); n > 0 && md[n-1] == "" && !atEnd {
			md = md[:n-1]
		}
		nb.Cells = append(nb.Cells, Cell{Type: MarkdownCell, Text: strings.Join(md, "\n")})
		md = nil
	}
	for i < len(lines) {
		line := lines[i]
		if md == nil && len(nb.Cells) == 0 && strings.HasPrefix(line, "# ") {
			nb.Cells = append(nb.Cells, Cell{Type: TitleCell, Text: strings.TrimPrefix(line, "# ")})
			i += 2 // the heading and the blank line after it
			continue
		}
		if line == cellBreak {
			flush(false)
			md = []string{}
			i += 2
			continue
		}
		if c, next, ok := codeBlock(lines, i); ok {
			flush(false)
			nb.Cells = append(nb.Cells, c)
			i = next + 2 // past the blank line after the block
			continue
		}
		md = append(md, line)
		i++
	}
	flush(true)
	return nb, nil
}

// codeBlock reads "###### name", a blank line and a fenced block starting
// at lines[i]; next is the index of the closing fence.
func codeBlock(lines []string, i int) (Cell, int, bool) {
	name, ok := strings.CutPrefix(lines[i], "###### ")
	if !ok || i+2 >= len(lines) || lines[i+1] != "" || !strings.HasPrefix(lines[i+2], "```") {
		return Cell{}, 0, false
	}
	open := lines[i+2]
	fence := open[:len(open)-len(strings.TrimLeft(open, "`"))]
	info := strings.TrimSpace(open[len(fence):])
	for j := i + 3; j < len(lines); j++ {
		if lines[j] != fence {
			continue
		}
		src := strings.Join(lines[i+3:j], "\n")
		if name == "package.json" {
			return Cell{Type: PackageJSONCell, Filename: name, Source: src, Status: StatusIdle}, j, true
		}
		c := Cell{Type: CodeCell, Filename: name, Source: src, Status: StatusIdle, Language: languageOf(name)}
		if lang, err := ParseLanguage(info); err == nil && info != "" {
			c.Language = lang
		}
		return c, j, true
	}
	return Cell{}, 0, false
}

// Export returns the notebook as .src.md.
func (s *Service) Export(ctx context.Context, id string) (string, error) {
	nb, err := s.Load(ctx, id)
	if err != nil {
		return "", err
	}
	return ExportText(nb), nil
}

// Import stores a .src.md text as a new notebook, its id made from its
// title.
func (s *Service) Import(ctx context.Context, srcmd string, author ledger.Author) (*Notebook, error) {
	if len(srcmd) > 16<<20 {
		return nil, ledger.InvalidField("content", "expected at most 16 MiB of .src.md, got %d bytes", len(srcmd))
	}
	nb, err := ParseText(srcmd)
	if err != nil {
		return nil, ledger.InvalidField("content", "%v", err)
	}
	title := nb.Title()
	if err := checkTitle("content", title); err != nil {
		return nil, ledger.InvalidField("content", "expected a title line \"# …\" before the first cell")
	}
	seen := map[string]bool{}
	for i := range nb.Cells {
		c := &nb.Cells[i]
		c.ID = newCellID()
		if c.Type == CodeCell {
			if !filenamePattern.MatchString(c.Filename) {
				return nil, ledger.InvalidField("content", "code cell %d: expected a filename like helpers.ts under \"###### \", got %q", i+1, c.Filename)
			}
			if seen[c.Filename] {
				return nil, ledger.InvalidField("content", "two code cells are named %q", c.Filename)
			}
			seen[c.Filename] = true
		}
		if len(c.Content()) > maxCellBytes {
			return nil, ledger.InvalidField("content", "cell %d: expected at most %d bytes, got %d", i+1, maxCellBytes, len(c.Content()))
		}
		if c.Type == PackageJSONCell {
			if err := checkManifest(c.Source); err != nil {
				return nil, err
			}
		}
	}
	now := s.nowMs()
	nb.CreatedAt, nb.UpdatedAt = now, now
	return s.create(ctx, slug(title), nb, author, func(id string) string {
		return fmt.Sprintf("Import notebook %s from .src.md (%d cells)", id, len(nb.Cells))
	})
}
