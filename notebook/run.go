package notebook

import (
	"context"
	"errors"
	"fmt"
	"path"
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
// one sandbox child, in order, stopping at the first that fails. The whole
// run shares Options.Timeout.
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
	for i := 0; i <= last; i++ {
		c := nb.Cells[i]
		if c.Type != CodeCell {
			continue
		}
		r := runResult{index: i, RunResult: RunResult{CellID: c.ID, Filename: c.Filename}}
		var started time.Time
		fail := func(msg string) {
			r.Status, r.Error = StatusFailed, &msg
		}
		if msg, bad := compileErrs[i]; bad {
			fail(msg)
		} else {
			if sess == nil {
				sess, err = s.child(ctx, mods)
				if err != nil {
					return nil, ledger.Errorf(ledger.CodeInternal, "running notebook %q: %w", nb.ID, err)
				}
			}
			// The child's start is not the cells' time: the budget and
			// durationMs count from here.
			started = time.Now()
			res, err := sess.RunModule(ctx, cellModule(c), sandbox.RunOptions{Timeout: max(left, time.Millisecond), MaxOutput: s.opts.MaxOutput})
			r.Output = res.Output
			switch {
			case err != nil:
				// The child is gone (memory, CPU, killed): the run ends here.
				fail(fmt.Sprintf("%s: %v", c.Filename, err))
			case res.Interrupted && ctx.Err() != nil:
				fail(fmt.Sprintf("%s: interrupted: the run was cancelled (%v)", c.Filename, context.Cause(ctx)))
			case res.Interrupted:
				fail(fmt.Sprintf("%s: interrupted: the notebook run took longer than its %v limit (THOUGHTBOX_NOTEBOOK_TIMEOUT)", c.Filename, s.opts.Timeout))
			case res.Error != "":
				fail(res.Error)
			default:
				r.Status = StatusCompleted
			}
		}
		if !started.IsZero() {
			elapsed := time.Since(started)
			r.DurationMs = elapsed.Milliseconds()
			left -= elapsed
		}
		out = append(out, r)
		if r.Status == StatusFailed {
			break
		}
	}
	return out, nil
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
	last := results[len(results)-1]
	res := last.RunResult
	if last.index != target {
		msg := fmt.Sprintf("not run: the earlier cell %s failed: %s", cellName(nb, last.index), *last.Error)
		res = RunResult{CellID: c.ID, Filename: c.Filename, Status: StatusFailed, Error: &msg}
	}
	name := cellName(nb, target)
	if err := s.storeResults(ctx, nb, results, author, fmt.Sprintf("Run cell %s: %s", name, res.Status)); err != nil {
		return RunResult{}, err
	}
	return res, nil
}

// RunAll runs every code cell in order, stopping at the first failure,
// and stores the results in one commit.
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
	failed := 0
	for i, r := range results {
		out[i] = r.RunResult
		if r.Status == StatusFailed {
			failed++
		}
	}
	msg := fmt.Sprintf("Run all cells: %d completed", len(results)-failed)
	if failed > 0 {
		msg += fmt.Sprintf(", %s failed", cellName(nb, results[len(results)-1].index))
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
