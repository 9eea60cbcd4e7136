package notebook

import (
	"fmt"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/sandbox"
)

// The figures of BENCHMARKS.md, "Sandbox, notebooks, stopping". Storage is the
// in-memory test store, so these are the notebook package's own costs
// (the gitstore write is measured by gitstore's benchmarks).

func benchService(b *testing.B) *Service {
	svc := NewService(newMemStore(), Options{WorkDir: b.TempDir()})
	b.Cleanup(func() { svc.Close() })
	return svc
}

func BenchmarkCreate(b *testing.B) {
	svc := benchService(b)
	for i := 0; b.Loop(); i++ {
		if _, err := svc.Create(b.Context(), CreateRequest{Name: fmt.Sprintf("bench %d", i), Template: TemplateSequentialFeynman, Author: agent}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAddCell(b *testing.B) {
	svc := benchService(b)
	nb, err := svc.Create(b.Context(), CreateRequest{Name: "bench", Template: TemplateSequentialFeynman, Author: agent})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		// A fresh notebook every 100 cells, so the figure is for a
		// notebook of 10 to 110 cells, not one that grows with b.N.
		if i%100 == 99 {
			b.StopTimer()
			if nb, err = svc.Create(b.Context(), CreateRequest{Name: "bench", Template: TemplateSequentialFeynman, Author: agent}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if _, _, err := svc.AddCell(b.Context(), AddCellRequest{NotebookID: nb.ID, Type: "code", Content: "console.log(1 + 1);\n", Author: agent}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunCell is RunCell of a trivial cell end to end (load,
// transpile, take the spare child, run, store the result) at an agent's
// pace: the spare child started after the previous run is ready.
func BenchmarkRunCell(b *testing.B) {
	benchRunCell(b, true)
}

// BenchmarkRunCellColdStart is the same with no spare child: the run
// waits for a child to start.
func BenchmarkRunCellColdStart(b *testing.B) {
	benchRunCell(b, false)
}

func benchRunCell(b *testing.B, spare bool) {
	svc := benchService(b)
	nb, err := svc.Create(b.Context(), CreateRequest{Name: "bench", Template: TemplateBlank, Language: "javascript", Author: agent})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		svc.spareWG.Wait() // the previous run's spare is started (or its child closed)
		svc.spareMu.Lock()
		if !spare && svc.spare != nil {
			svc.spare.Close()
			svc.spare = nil
		}
		svc.spareMu.Unlock()
		b.StartTimer()
		r, err := svc.RunCell(b.Context(), nb.ID, "code-1.js", agent)
		if err != nil || r.Status != StatusCompleted {
			b.Fatalf("%+v %v", r, err)
		}
	}
}

// BenchmarkRunCellWarm is one trivial cell in a child that is already
// running: the cost of each further cell of a run.
func BenchmarkRunCellWarm(b *testing.B) {
	const perSession = 2000
	src, err := Transpile("t.ts", "const x: number = 1 + 1;\nconsole.log(x);\n", TypeScript)
	if err != nil {
		b.Fatal(err)
	}
	mods := &sandbox.Modules{Root: b.TempDir(), Sources: map[string]string{}}
	for i := range perSession {
		mods.Sources[fmt.Sprintf("cells/c%d.ts", i)] = src
	}
	var sess *sandbox.Session
	defer func() {
		if sess != nil {
			sess.Close()
		}
	}()
	for i := 0; b.Loop(); i++ {
		if i%perSession == 0 {
			b.StopTimer()
			if sess != nil {
				sess.Close()
			}
			if sess, err = sandbox.Start(b.Context(), sandbox.Config{Modules: mods}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		r, err := sess.RunModule(b.Context(), fmt.Sprintf("cells/c%d.ts", i%perSession), sandbox.RunOptions{})
		if err != nil || r.Output != "2\n" {
			b.Fatalf("%+v %v", r, err)
		}
	}
}

// BenchmarkTranspile200Lines is esbuild on a 200-line TypeScript cell.
func BenchmarkTranspile200Lines(b *testing.B) {
	src := typeScript200()
	if n := strings.Count(src, "\n"); n != 200 {
		b.Fatalf("%d lines", n)
	}
	for b.Loop() {
		if _, err := Transpile("big.ts", src, TypeScript); err != nil {
			b.Fatal(err)
		}
	}
}

// typeScript200 is 200 lines of ordinary TypeScript: interfaces, an
// enum, a class, generics, functions.
func typeScript200() string {
	lines := []string{
		"enum Color { Red = 'red', Green = 'green', Blue = 'blue' }",
		"interface Item<T> { id: number; value: T; color: Color }",
		"export class Store<T> {",
		"  private items: Item<T>[] = [];",
		"  add(value: T, color: Color = Color.Red): Item<T> {",
		"    const item = { id: this.items.length, value, color };",
		"    this.items.push(item);",
		"    return item;",
		"  }",
		"  get size(): number { return this.items.length; }",
		"}",
	}
	for i := 0; len(lines)+5 <= 200; i++ {
		lines = append(lines,
			fmt.Sprintf("export function f%d(xs: number[], k: number = %d): { sum: number; max: number } {", i, i),
			"  const sum = xs.reduce((a: number, x: number) => a + x * k, 0);",
			"  const max = Math.max(...xs.map((x) => x + k));",
			"  return { sum, max };",
			"}")
	}
	for len(lines) < 200 {
		lines = append(lines, "// end")
	}
	return strings.Join(lines, "\n") + "\n"
}
