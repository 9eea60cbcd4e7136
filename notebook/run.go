package notebook

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sandbox"
)

// Transpile turns one code cell into the CommonJS module the sandbox
// runs: types stripped, enums and ES module syntax lowered, syntax newer
// than goja's lowered to ES2017, with an inline source map so that
// runtime errors point at the cell's own lines. A syntax or type-syntax
// error is returned as "check.ts:3:10: message".
func Transpile(filename, source string, lang Language) (string, error) {
	return transpile(filename, source, lang, nil)
}

// transpile is Transpile under the notebook's tsconfig.json, when it has
// one: esbuild honours the settings that change what code means
// (experimentalDecorators, useDefineForClassFields, verbatimModuleSyntax,
// jsx…), not the type checker's.
func transpile(filename, source string, lang Language, tsconfig *string) (string, error) {
	code, err := transpileAs(filename, source, lang, tsconfig)
	if err == nil || !strings.Contains(err.Error(), "Top-level await is not available") {
		return code, err
	}
	// goja runs CommonJS, which has no top-level await; an async function
	// has await, and the sandbox runs the promise's jobs (and timers)
	// before the cell ends, reporting a rejection. The wrapper opens on
	// the cell's first line, so that line numbers stay the cell's.
	code, werr := transpileAs(filename, "(async () => {"+source+"\n})();\n", lang, tsconfig)
	if werr != nil {
		return "", fmt.Errorf("%v\n%s: top-level await works in a cell that neither imports nor exports; move the awaits into an async function that the cell calls, or the imports and exports into another cell", err, filename)
	}
	return code, nil
}

// transpileAs is one esbuild transform of a cell.
func transpileAs(filename, source string, lang Language, tsconfig *string) (string, error) {
	loader := api.LoaderTS
	if lang == JavaScript {
		loader = api.LoaderJS
	}
	res := api.Transform(source, api.TransformOptions{
		Loader:     loader,
		Format:     api.FormatCommonJS,
		Target:     api.ES2017,
		Sourcefile: filename,
		Sourcemap:  api.SourceMapInline,
		TsconfigRaw: func() string {
			if tsconfig == nil {
				return ""
			}
			return *tsconfig
		}(),
		LogLevel: api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		msgs := make([]string, 0, len(res.Errors))
		for _, m := range res.Errors {
			msgs = append(msgs, formatMessage(filename, m))
		}
		return "", errors.New(strings.Join(msgs, "\n"))
	}
	return string(res.Code), nil
}

func formatMessage(filename string, m api.Message) string {
	if m.Location == nil {
		return filename + ": " + m.Text
	}
	return fmt.Sprintf("%s:%d:%d: %s", filename, m.Location.Line, m.Location.Column+1, m.Text)
}

// cellModule is where a code cell's module lives in the sandbox, relative
// to the work folder: cells/<filename>.
func cellModule(c Cell) string { return "cells/" + c.Filename }

// modulesFor compiles the code cells of nb up to and including position
// last, and gives each its aliases: the filename without its extension
// and the stored name ("03-check.ts"), so that `import './check'` and
// `import './03-check.ts'` find the cell too. A cell that does not compile
// has its error in errs instead of a module.
func modulesFor(nb *Notebook, root string, last int) (*sandbox.Modules, map[int]string) {
	mods := &sandbox.Modules{Root: root, Sources: map[string]string{}, Aliases: map[string]string{}}
	errs := map[int]string{}
	defer func() {
		// A cell that does not compile is still imported by its names.
		for i := range errs {
			c := nb.Cells[i]
			stem := strings.TrimSuffix(c.Filename, path.Ext(c.Filename))
			if _, ok := mods.Aliases["cells/"+stem]; !ok {
				mods.Aliases["cells/"+stem] = cellModule(c)
			}
		}
	}()
	for i := 0; i <= last && i < len(nb.Cells); i++ {
		c := nb.Cells[i]
		if c.Type != CodeCell {
			continue
		}
		code, err := transpile(c.Filename, c.Source, c.Language, nb.TSConfig)
		if err != nil {
			errs[i] = err.Error()
			continue
		}
		name := cellModule(c)
		mods.Sources[name] = code
		stem := strings.TrimSuffix(c.Filename, path.Ext(c.Filename))
		mods.Aliases["cells/"+stem] = name
		if stored := "cells/" + path.Base(cellFile(i, c)); stored != name {
			mods.Aliases[stored] = name
			mods.Aliases[strings.TrimSuffix(stored, path.Ext(stored))] = name
		}
	}
	return mods, errs
}

// requireRE finds the relative imports of a transpiled cell: esbuild
// writes every import and export-from as require("./name").
var requireRE = regexp.MustCompile(`require\("(\.{1,2}/[^"]+)"\)`)

// importsOf lists the earlier code cells that cell i imports, by position
// (a cell that does not compile is found by its names all the same).
func importsOf(nb *Notebook, mods *sandbox.Modules, i int) []int {
	byModule := map[string]int{}
	for j := 0; j < i; j++ {
		if nb.Cells[j].Type == CodeCell {
			byModule[cellModule(nb.Cells[j])] = j
		}
	}
	var out []int
	for _, m := range requireRE.FindAllStringSubmatch(mods.Sources[cellModule(nb.Cells[i])], -1) {
		name := path.Clean(path.Join("cells", m[1]))
		if to, ok := mods.Aliases[name]; ok {
			name = to
		}
		if j, ok := byModule[name]; ok && !slices.Contains(out, j) {
			out = append(out, j)
		}
	}
	return out
}

// child returns a sandbox child for a run: the spare started after the
// previous run if there is one, else a new one. Either way a new spare is
// started in the background for the next run, so that a run rarely waits
// for a child to start (tens of milliseconds: an exec and a Go runtime).
func (s *Service) child(ctx context.Context, mods *sandbox.Modules) (*sandbox.Session, error) {
	s.spareMu.Lock()
	spare := s.spare
	s.spare = nil
	s.spareMu.Unlock()
	defer s.refillSpare()
	if spare != nil {
		if err := spare.SetModules(mods); err == nil {
			return spare, nil
		}
		spare.Close() // it died while it waited: start another
	}
	return sandbox.Start(ctx, sandbox.Config{Limits: s.opts.Limits, Modules: mods})
}

// refillSpare starts a spare child unless one is there or being started,
// or the Service is closed.
func (s *Service) refillSpare() {
	s.spareMu.Lock()
	if s.spare != nil || s.spareStarting || s.closed {
		s.spareMu.Unlock()
		return
	}
	s.spareStarting = true
	s.spareWG.Add(1)
	s.spareMu.Unlock()
	go func() {
		defer s.spareWG.Done()
		sess, err := sandbox.Start(context.Background(), sandbox.Config{Limits: s.opts.Limits, Modules: &sandbox.Modules{}})
		s.spareMu.Lock()
		defer s.spareMu.Unlock()
		s.spareStarting = false
		if err != nil {
			return // the next run starts its own child, and says why if it cannot
		}
		if s.closed || s.spare != nil {
			sess.Close()
			return
		}
		s.spare = sess
		idle := s.opts.SpareIdle
		if idle <= 0 {
			idle = DefaultSpareIdle
		}
		time.AfterFunc(idle, func() { s.retireSpare(sess) })
	}()
}

// retireSpare ends sess if it is still the unused spare.
func (s *Service) retireSpare(sess *sandbox.Session) {
	s.spareMu.Lock()
	if s.spare != sess {
		s.spareMu.Unlock()
		return // taken by a run, or already gone with Close
	}
	s.spare = nil
	s.spareMu.Unlock()
	sess.Close()
}

// runResult is one cell's outcome before it is stored.
type runResult struct {
	index int
	RunResult
}

// execute runs the code cells of nb up to and including position last, in
// one sandbox child, in order. A cell that fails stops only the cells that
// import it (directly or through another cell), which are skipped and say
// why; the others still run. A child that ends (memory, CPU) or a run out
// of time ends the run: the cells after it are skipped. The whole run
// shares Options.Timeout.
func (s *Service) execute(ctx context.Context, nb *Notebook, last int) ([]runResult, error) {
	root, err := s.workDir(nb.ID)
	if err != nil {
		return nil, err
	}
	mods, compileErrs := modulesFor(nb, root, last)
	var out []runResult
	var sess *sandbox.Session
	defer func() {
		if sess != nil {
			// Ending the child is off the run's path too; Close waits
			// for it.
			s.spareWG.Add(1)
			go func() {
				defer s.spareWG.Done()
				sess.Close()
			}()
		}
	}()
	left := s.opts.Timeout
	broken := map[int]string{} // cells that failed or were skipped: why
	ended := ""                // why the run stopped, once it has
	for i := 0; i <= last; i++ {
		c := nb.Cells[i]
		if c.Type != CodeCell {
			continue
		}
		r := runResult{index: i, RunResult: RunResult{CellID: c.ID, Filename: c.Filename}}
		if why := skipReason(nb, mods, i, broken, ended); why != "" {
			r.Status, r.Skipped = c.Status, why
			if r.Status == "" {
				r.Status = StatusIdle
			}
			broken[i] = "was skipped"
			out = append(out, r)
			continue
		}
		if msg, bad := compileErrs[i]; bad {
			r.Status, r.Error = StatusFailed, &msg
		} else {
			if sess == nil {
				sess, err = s.child(ctx, mods)
				if err != nil {
					return nil, ledger.Errorf(ledger.CodeInternal, "running notebook %q: %w", nb.ID, err)
				}
			}
			var stop string
			stop, left = s.runOne(ctx, sess, c, &r, left)
			if stop != "" {
				ended = stop
			}
		}
		if r.Status == StatusFailed {
			first, _, _ := strings.Cut(*r.Error, "\n")
			broken[i] = "failed: " + first
		}
		out = append(out, r)
	}
	return out, nil
}

// skipReason says why cell i must not run ("" if it may): the run ended,
// or it imports a cell that failed or was skipped.
func skipReason(nb *Notebook, mods *sandbox.Modules, i int, broken map[int]string, ended string) string {
	if ended != "" {
		return "not run: " + ended
	}
	for _, j := range importsOf(nb, mods, i) {
		if why, ok := broken[j]; ok {
			return fmt.Sprintf("not run: it imports cell %s, which %s", cellName(nb, j), why)
		}
	}
	return ""
}

// runOne runs cell c in sess within the time left, filling r; it returns
// why the whole run must stop ("" if it need not) and the time left.
func (s *Service) runOne(ctx context.Context, sess *sandbox.Session, c Cell, r *runResult, left time.Duration) (string, time.Duration) {
	fail := func(msg string) { r.Status, r.Error = StatusFailed, &msg }
	// The child's start is not the cells' time: the budget and durationMs
	// count from here.
	started := time.Now()
	res, err := sess.RunModule(ctx, cellModule(c), sandbox.RunOptions{Timeout: max(left, time.Millisecond), MaxOutput: s.opts.MaxOutput})
	r.Output = res.Output
	stop := ""
	switch {
	case err != nil:
		// The child is gone (memory, CPU, killed): the run ends here.
		fail(fmt.Sprintf("%s: %v", c.Filename, err))
		stop = "the sandbox ended while " + c.Filename + " ran"
	case res.Interrupted && ctx.Err() != nil:
		fail(fmt.Sprintf("%s: interrupted: the run was cancelled (%v)", c.Filename, context.Cause(ctx)))
		stop = "the run was cancelled"
	case res.Interrupted:
		fail(fmt.Sprintf("%s: interrupted: the notebook run took longer than its %v limit (THOUGHTBOX_NOTEBOOK_TIMEOUT)", c.Filename, s.opts.Timeout))
		stop = "the run's time ran out (THOUGHTBOX_NOTEBOOK_TIMEOUT)"
	case res.Error != "":
		fail(res.Error)
	default:
		r.Status = StatusCompleted
	}
	elapsed := time.Since(started)
	r.DurationMs = elapsed.Milliseconds()
	return stop, left - elapsed
}

// RunCell runs the notebook's code cells up to and including cellID (the
// earlier ones again, in the same runtime, so that their exports exist),
// and stores the status, output and error of each cell that ran in one
// commit. The result is the cell's; if an earlier cell failed, the cell
// did not run, and the result says which one failed.
func (s *Service) RunCell(ctx context.Context, notebookID, cellID string, author ledger.Author) (RunResult, error) {
	nb, err := s.Load(ctx, notebookID)
	if err != nil {
		return RunResult{}, err
	}
	target, err := findCell(nb, cellID)
	if err != nil {
		return RunResult{}, err
	}
	c := nb.Cells[target]
	if c.Type != CodeCell {
		return RunResult{}, ledger.InvalidField("cellId", "cell %s is a %s cell; only code cells run", cellName(nb, target), c.Type)
	}
	results, err := s.execute(ctx, nb, target)
	if err != nil {
		return RunResult{}, err
	}
	res := results[len(results)-1].RunResult
	if res.Skipped != "" {
		// The cell's own reply says it did not run, and why.
		msg := res.Skipped
		res.Status, res.Error = StatusFailed, &msg
	}
	name := cellName(nb, target)
	if err := s.storeResults(ctx, nb, results, author, fmt.Sprintf("Run cell %s: %s", name, res.Status)); err != nil {
		return RunResult{}, err
	}
	return res, nil
}

// RunAll runs every code cell in order (a failure skips only the cells
// that import the failed one; see execute) and stores the results in one
// commit.
func (s *Service) RunAll(ctx context.Context, notebookID string, author ledger.Author) ([]RunResult, error) {
	nb, err := s.Load(ctx, notebookID)
	if err != nil {
		return nil, err
	}
	results, err := s.execute(ctx, nb, len(nb.Cells)-1)
	if err != nil {
		return nil, err
	}
	out := make([]RunResult, len(results))
	var failed, skipped []string
	for i, r := range results {
		out[i] = r.RunResult
		switch {
		case r.Skipped != "":
			skipped = append(skipped, cellName(nb, r.index))
		case r.Status == StatusFailed:
			failed = append(failed, cellName(nb, r.index))
		}
	}
	msg := fmt.Sprintf("Run all cells: %d completed", len(results)-len(failed)-len(skipped))
	if len(failed) > 0 {
		msg += fmt.Sprintf(", %s failed", strings.Join(failed, ", "))
	}
	if len(skipped) > 0 {
		msg += fmt.Sprintf(", %s skipped", strings.Join(skipped, ", "))
	}
	if len(results) == 0 {
		return out, nil
	}
	if err := s.storeResults(ctx, nb, results, author, msg); err != nil {
		return nil, err
	}
	return out, nil
}

// storeResults records run results in one commit. A cell whose source
// changed while it ran keeps its new source and idle status: the results
// were for other code.
func (s *Service) storeResults(ctx context.Context, ran *Notebook, results []runResult, author ledger.Author, msg string) error {
	_, err := s.change(ctx, ran.ID, author, func(nb *Notebook) (string, error) {
		for _, r := range results {
			if r.Skipped != "" {
				continue // it did not run: its stored status stays
			}
			i := nb.index(r.CellID)
			if i < 0 || nb.Cells[i].Source != ran.Cells[r.index].Source {
				continue
			}
			c := &nb.Cells[i]
			out := r.Output
			c.Status, c.Output, c.Error = r.Status, &out, r.Error
		}
		return msg, nil
	})
	return err
}
