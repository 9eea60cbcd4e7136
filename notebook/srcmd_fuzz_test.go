package notebook

import (
	"testing"
)

// FuzzSrcmd checks that whatever .src.md text is read, writing it out and
// reading that back gives the same notebook and the same bytes.
func FuzzSrcmd(f *testing.F) {
	for _, tmpl := range Templates {
		for _, lang := range []Language{TypeScript, JavaScript} {
			cells, _ := templateCells(tmpl, "T", lang)
			f.Add(ExportText(&Notebook{Language: lang, Cells: cells}))
		}
	}
	f.Add("# T\n\nmd\n\n<!-- cell -->\n\n\n\n###### a.ts\n\n````ts\n```\n````\n")
	f.Add("<!-- srcbook:{\"language\":\"javascript\",\"tsconfig.json\":{\"a\":1}} -->\n\n# x\n")
	f.Fuzz(func(t *testing.T, text string) {
		nb, err := ParseText(text)
		if err != nil {
			return
		}
		first := ExportText(nb)
		nb2, err := ParseText(first)
		if err != nil {
			t.Fatalf("reading our own export: %v\n%q", err, first)
		}
		if second := ExportText(nb2); second != first {
			t.Fatalf("export → import → export differs:\n%q\n%q", first, second)
		}
		if len(nb.Cells) != len(nb2.Cells) {
			t.Fatalf("%d cells became %d:\n%q", len(nb.Cells), len(nb2.Cells), first)
		}
		for i := range nb.Cells {
			a, b := nb.Cells[i], nb2.Cells[i]
			if a.Type != b.Type || a.Content() != b.Content() || a.Filename != b.Filename {
				t.Fatalf("cell %d: %+v became %+v\n%q", i, a, b, first)
			}
		}
	})
}
