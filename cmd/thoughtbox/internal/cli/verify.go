package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/project"
)

type verifyCmd struct {
	ID     string `arg:"" optional:"" name:"id" help:"Session id or unique prefix; all sessions if omitted."`
	Repair bool   `help:"First salvage a damaged write-ahead log: keep every record that checks out (the damaged log is copied aside), then verify."`
	Full   bool   `help:"Rebuild and hash every version of every object, as git fsck does, instead of checking packed deltas against their checked base (slower: grows with the square of a session's length)."`
}

// repairLog runs before the ledger is opened (a damaged log stops the
// opening): it salvages the log and says what it kept and what it could
// not.
func repairLog(env Env, cfg *config.Config) error {
	if cfg.Storage != config.StorageFS {
		return nil
	}
	if _, err := os.Stat(filepath.Join(cfg.RepoPath(), "thoughtbox", "log")); err != nil {
		fmt.Fprintf(env.Stderr, "repair: %s has no write-ahead log; nothing to repair\n", cfg.RepoPath())
		return nil
	}
	rep, err := project.RepairLog(cfg)
	if err != nil {
		return fmt.Errorf("repair the write-ahead log: %w", err)
	}
	if rep.Saved == "" {
		fmt.Fprintf(env.Stderr, "repair: the write-ahead log has no damage (%d records)\n", rep.Kept)
		return nil
	}
	fmt.Fprintf(env.Stderr, "repair: the write-ahead log was damaged; the original is kept as %s\n", rep.Saved)
	fmt.Fprintf(env.Stderr, "repair: kept %d records that check out\n", rep.Kept)
	for _, r := range rep.Lost {
		fmt.Fprintf(env.Stderr, "repair: lost bytes %d to %d (no intact record there)\n", r[0], r[1])
	}
	if rep.Dropped > 0 {
		fmt.Fprintf(env.Stderr, "repair: left out %d intact records that built on a lost one, on %s\n", rep.Dropped, strings.Join(rep.DroppedRefs, ", "))
	}
	return nil
}

// verifyOutput is the JSON form of one session's check.
type verifyOutput struct {
	SessionID string                           `json:"sessionId"`
	Title     string                           `json:"title"`
	Integrity ledger.IntegrityValidationResult `json:"integrity"`
}

func (c *verifyCmd) Run(a *app) error {
	list, err := a.ledger.List(a.ctx)
	if err != nil {
		return err
	}
	// A session whose main ref file is damaged is not listed; verify
	// still checks it.
	damaged, err := a.proj.DamagedRefs()
	if err != nil {
		return err
	}
	for id := range damaged {
		if !slices.ContainsFunc(list, func(s ledger.Session) bool { return s.ID == id }) {
			list = append(list, ledger.Session{ID: id, Title: "(unreadable ref)"})
		}
	}
	if c.ID != "" {
		id, err := a.resolve(c.ID)
		if _, ok := damaged[c.ID]; err != nil && ok {
			id, err = c.ID, nil
		}
		if err != nil {
			return err
		}
		i := slices.IndexFunc(list, func(s ledger.Session) bool { return s.ID == id })
		if i < 0 { // gone since Resolve listed it
			return ledger.Errorf(ledger.CodeSessionNotFound, "session %q: %w", id, ledger.ErrSessionNotFound)
		}
		list = list[i : i+1]
	}

	out := make([]verifyOutput, 0, len(list))
	var invalid []string
	for _, s := range list {
		res, err := a.ledger.Verify(a.ctx, s.ID, ledger.VerifyOptions{Full: c.Full})
		if err != nil {
			if a.ctx.Err() != nil {
				return err
			}
			// One session that cannot be checked does not stop the check
			// of the others: it is reported as damaged.
			res = ledger.IntegrityValidationResult{Errors: []string{"the check failed: " + err.Error()}}
		}
		if !res.Valid {
			invalid = append(invalid, s.ID)
		}
		out = append(out, verifyOutput{SessionID: s.ID, Title: s.Title, Integrity: res})
	}

	if a.format == FormatJSON {
		if err := writeJSON(a.env.Stdout, out); err != nil {
			return err
		}
	} else {
		if len(out) == 0 {
			fmt.Fprintf(a.env.Stderr, "no sessions in project %s (%s) to verify\n", a.cfg.Project, a.cfg.DataDir)
		}
		for _, o := range out {
			status := "OK"
			if !o.Integrity.Valid {
				status = "INVALID"
			}
			fmt.Fprintf(a.env.Stdout, "%-7s  %s  %s\n", status, o.SessionID, clip(oneLine(o.Title), 60))
			for _, p := range problems(o.Integrity) {
				fmt.Fprintf(a.env.Stdout, "         - %s\n", p)
			}
		}
	}
	if len(invalid) > 0 {
		f := &failure{msg: fmt.Sprintf("%d of %s failed the integrity check: %s",
			len(invalid), plural(len(out), "session", "sessions"), strings.Join(invalid, ", "))}
		if a.cfg.Storage == config.StorageFS {
			f.hints = []string{fmt.Sprintf("'git --git-dir %s fsck' shows what plain Git sees", a.cfg.RepoPath())}
		}
		return f
	}
	return nil
}

// problems lists what an integrity result found wrong, one line each. The
// store explains a missing folder or a bad manifest in Errors (which ref,
// which commit); the flags speak only when it did not.
func problems(r ledger.IntegrityValidationResult) []string {
	var out []string
	if len(r.Errors) == 0 {
		if !r.SessionExists {
			out = append(out, "the session's folder does not exist")
		}
		if r.SessionExists && !r.ManifestExists {
			out = append(out, "manifest.json is missing")
		}
		if r.ManifestExists && !r.ManifestValid {
			out = append(out, "manifest.json does not parse")
		}
	}
	for _, f := range r.MissingThoughtFiles {
		out = append(out, "missing thought file "+f)
	}
	branches := make([]string, 0, len(r.MissingBranchFiles))
	for b := range r.MissingBranchFiles {
		branches = append(branches, b)
	}
	slices.Sort(branches)
	for _, b := range branches {
		for _, f := range r.MissingBranchFiles[b] {
			out = append(out, fmt.Sprintf("missing file %s of branch %s", f, b))
		}
	}
	return append(out, r.Errors...)
}
