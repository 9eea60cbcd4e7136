package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/export"
	"github.com/thoughtbox/thoughtbox/ledger"
)

type startCmd struct {
	Title       string   `arg:"" help:"Session title (at most 200 characters)."`
	Tags        []string `name:"tag" placeholder:"TAG" help:"A tag; repeat the flag for more."`
	Description string   `placeholder:"TEXT" emptyok:"" help:"A longer description (empty: none)."`
}

// Validate refuses a title that is wrong in itself (exit 2).
func (c *startCmd) Validate() error {
	if strings.TrimSpace(c.Title) == "" {
		return fmt.Errorf("<title> must not be empty")
	}
	return checkTitle("<title>", &c.Title)
}

func (c *startCmd) Run(a *app) error {
	s, err := a.ledger.StartSession(a.ctx, ledger.CreateSessionParams{
		Title:       c.Title,
		Description: c.Description,
		Tags:        c.Tags,
	}, a.author())
	if err != nil {
		return err
	}
	if a.cfg.Storage == config.StorageMemory {
		fmt.Fprintln(a.env.Stderr, "note: THOUGHTBOX_STORAGE=memory: this session ends with this command")
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, s)
	}
	_, err = fmt.Fprintln(a.env.Stdout, s.ID)
	return err
}

type addCmd struct {
	ID        string   `arg:"" name:"id" help:"Session id or unique prefix."`
	Text      string   `arg:"" name:"text" help:"The thought; - reads it from standard input."`
	Number    *int     `placeholder:"N" help:"Thought number (default: the next free number on its chain)."`
	Total     *int     `placeholder:"N" help:"Estimated total number of thoughts."`
	Branch    string   `placeholder:"BRANCH" help:"Record the thought on this reasoning branch (^[a-z0-9-]+$)."`
	From      *int     `placeholder:"N" help:"Main-chain thought the branch forks from (needed to start a branch)."`
	Revises   *int     `placeholder:"N" help:"Mark the thought as a revision of thought N."`
	Done      bool     `help:"No further thought is needed: marks the session completed."`
	NeedsMore bool     `name:"needs-more" help:"Say that more thoughts than estimated are needed."`
	Code      []string `placeholder:"PATH[:FROM[-TO]]|COMMIT" help:"Code the thought is about: a file (relative to here; stored relative to the repository's root), a line range of it, or a commit. Repeatable."`
}

// Validate checks flag combinations kong cannot express (exit 2).
func (c *addCmd) Validate() error {
	for _, f := range []struct {
		flag string
		v    *int
	}{{"--number", c.Number}, {"--total", c.Total}, {"--from", c.From}, {"--revises", c.Revises}} {
		if f.v != nil && *f.v < 1 {
			return fmt.Errorf("%s must be at least 1, got %d", f.flag, *f.v)
		}
		if f.v != nil && *f.v > ledger.MaxThoughtNumber {
			return fmt.Errorf("%s must be at most %d, got %d", f.flag, ledger.MaxThoughtNumber, *f.v)
		}
	}
	if strings.TrimSpace(c.Text) == "" {
		return fmt.Errorf("<text> must not be empty (- reads it from standard input)")
	}
	if err := checkBranch("--branch", c.Branch); err != nil {
		return err
	}
	if c.From != nil && c.Branch == "" {
		return fmt.Errorf("--from needs --branch: it names the main-chain thought a branch forks from")
	}
	return nil
}

// addOutput is the JSON form of add.
type addOutput struct {
	SessionID string             `json:"sessionId"`
	Commit    string             `json:"commit"`
	Thought   ledger.ThoughtData `json:"thought"`
	Node      ledger.ThoughtNode `json:"node"`
	Session   ledger.Session     `json:"session"`
	Completed bool               `json:"completed"`
	// Reopened is set when the session was completed and this thought
	// opened it again.
	Reopened  bool              `json:"reopened,omitempty"`
	NewBranch bool              `json:"newBranch"`
	Branches  []ledger.BranchID `json:"branches"`
	// ExportPath is where the session was exported when this thought
	// completed it.
	ExportPath string `json:"exportPath,omitempty"`
}

func (c *addCmd) Run(a *app) error {
	text := c.Text
	if text == "-" {
		// Read at most one byte past the limit: a thought too large is
		// refused without holding all of it in memory.
		limit := a.ledger.MaxThoughtBytes()
		b, err := io.ReadAll(io.LimitReader(a.env.Stdin, int64(limit)+2))
		if err != nil {
			return fmt.Errorf("read the thought from standard input: %w", err)
		}
		if len(strings.TrimRight(string(b), "\n")) > limit {
			return ledger.InvalidField("thought", "is more than %d bytes, the limit (THOUGHTBOX_MAX_THOUGHT_BYTES): split it into several thoughts", limit)
		}
		text = strings.TrimRight(string(b), "\n")
	}
	id, err := a.resolve(c.ID)
	if err != nil {
		return err
	}
	code, err := a.codeRefs(c.Code)
	if err != nil {
		return err
	}
	in := ledger.ThoughtInput{
		Code:              code,
		Thought:           text,
		ThoughtNumber:     c.Number,
		TotalThoughts:     c.Total,
		NextThoughtNeeded: !c.Done,
		IsRevision:        c.Revises != nil,
		RevisesThought:    c.Revises,
		BranchID:          c.Branch,
		BranchFromThought: c.From,
		NeedsMoreThoughts: c.NeedsMore,
	}
	res, err := a.ledger.AddThought(a.ctx, id, in, a.author())
	if err != nil {
		return err
	}
	// A completed session is exported as over MCP; memory storage keeps
	// nothing on disk, so it writes no export either.
	var exportPath string
	if res.Completed && a.cfg.Storage != config.StorageMemory {
		if exportPath, err = export.Completed(a.ctx, a.ledger, filepath.Join(a.cfg.DataDir, "exports"), id, a.proj.Events()); err != nil {
			return fmt.Errorf("thought %d was recorded, but the session's export failed: %w", res.Thought.ThoughtNumber, err)
		}
	}
	if a.format == FormatJSON {
		branches := res.Branches
		if branches == nil {
			branches = []ledger.BranchID{}
		}
		return writeJSON(a.env.Stdout, addOutput{
			SessionID:  id,
			Commit:     string(res.Node.Commit()),
			Thought:    res.Thought,
			Node:       res.Node,
			Session:    res.Session,
			Completed:  res.Completed,
			Reopened:   res.Reopened,
			NewBranch:  res.NewBranch,
			Branches:   branches,
			ExportPath: exportPath,
		})
	}
	var notes []string
	if res.Thought.BranchID != "" {
		what := "branch "
		if res.NewBranch {
			what = "new branch "
		}
		notes = append(notes, fmt.Sprintf("%s%s from %d", what, res.Thought.BranchID, *res.Thought.BranchFromThought))
	}
	if res.Thought.RevisesThought != nil {
		notes = append(notes, fmt.Sprintf("revises %d", *res.Thought.RevisesThought))
	}
	if res.Reopened {
		notes = append(notes, "the session was completed; this thought reopens it")
	}
	if res.Completed {
		notes = append(notes, "session completed")
		if exportPath != "" {
			notes = append(notes, "exported to "+exportPath)
		}
	}
	line := fmt.Sprintf("thought %d recorded in %s", res.Thought.ThoughtNumber, id)
	if len(notes) > 0 {
		line += " (" + strings.Join(notes, ", ") + ")"
	}
	_, err = fmt.Fprintln(a.env.Stdout, line)
	return err
}

type editCmd struct {
	ID          string   `arg:"" name:"id" help:"Session id or unique prefix."`
	Title       *string  `placeholder:"TEXT" help:"New title (at most 200 characters)."`
	Description *string  `placeholder:"TEXT" help:"New description ('' clears it)."`
	Tags        []string `name:"tag" placeholder:"TAG" help:"Replace the tags with these; repeat the flag for more."`
	NoTags      bool     `name:"no-tags" help:"Remove every tag."`
	Private     bool     `name:"private" help:"In a code repository: never push this session (kept in .git/thoughtbox, not in the ledger)."`
	NoPrivate   bool     `name:"no-private" help:"Let push send this session again."`
}

// metadata says whether the command changes the session itself (a
// commit), not only its private mark.
func (c *editCmd) metadata() bool {
	return c.Title != nil || c.Description != nil || len(c.Tags) > 0 || c.NoTags
}

// Validate checks the flags (exit 2).
func (c *editCmd) Validate() error {
	if c.NoTags && len(c.Tags) > 0 {
		return fmt.Errorf("--no-tags and --tag cannot be combined")
	}
	if c.Private && c.NoPrivate {
		return fmt.Errorf("--private and --no-private cannot be combined")
	}
	if !c.metadata() && !c.Private && !c.NoPrivate {
		return fmt.Errorf("nothing to change: give --title, --description, --tag, --no-tags, --private or --no-private")
	}
	if c.Title != nil && strings.TrimSpace(*c.Title) == "" {
		return fmt.Errorf("--title must not be empty")
	}
	return checkTitle("--title", c.Title)
}

func (c *editCmd) Run(a *app) error {
	id, err := a.resolve(c.ID)
	if err != nil {
		return err
	}
	if c.Private || c.NoPrivate {
		// The mark first: it changes nothing in the ledger, and a
		// standalone ledger refuses it before any commit is made.
		changed, err := a.proj.SetPrivate(id, c.Private)
		if err != nil {
			return err
		}
		if !c.metadata() {
			if a.format == FormatJSON {
				return writeJSON(a.env.Stdout, map[string]any{"id": id, "private": c.Private, "changed": changed})
			}
			_, err = fmt.Fprintf(a.env.Stdout, "session %s %s\n", id, map[bool]string{true: "is private: push never sends it", false: "is not private: push sends it"}[c.Private])
			return err
		}
	}
	p := ledger.UpdateSessionParams{Title: c.Title, Description: c.Description}
	if len(c.Tags) > 0 || c.NoTags {
		tags := append([]string{}, c.Tags...)
		p.Tags = &tags
	}
	s, err := a.ledger.UpdateSession(a.ctx, id, p, a.author())
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, s)
	}
	_, err = fmt.Fprintf(a.env.Stdout, "session %s updated: %s\n", s.ID, s.Title)
	return err
}
