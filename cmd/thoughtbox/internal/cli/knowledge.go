package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// knowledgeCmd is `thoughtbox knowledge …`: the project's knowledge zone,
// the patterns and scratchpad notes kept on refs/heads/knowledge.
type knowledgeCmd struct {
	List   knowledgeListCmd   `cmd:"" help:"List patterns, most recently updated first."`
	Show   knowledgeShowCmd   `cmd:"" help:"Show one pattern with its content."`
	Create knowledgeCreateCmd `cmd:"" help:"Create a pattern and print its id. The content comes from --content or standard input."`
	Update knowledgeUpdateCmd `cmd:"" help:"Change the fields of a pattern that are given."`
	Delete knowledgeDeleteCmd `cmd:"" help:"Delete a pattern."`
	Tags   knowledgeTagsCmd   `cmd:"" help:"List the tags of the patterns, with how many patterns carry each."`
	Notes  notesCmd           `cmd:"" help:"Scratchpad notes: list, show, write, delete."`
}

type notesCmd struct {
	List   noteListCmd   `cmd:"" help:"List notes, most recently updated first."`
	Show   noteShowCmd   `cmd:"" help:"Show one note with its content."`
	Write  noteWriteCmd  `cmd:"" help:"Create a note, or replace an existing note's content. The content comes from --content or standard input."`
	Delete noteDeleteCmd `cmd:"" help:"Delete a note."`
}

// zone is the project's knowledge zone, on the ledger's store.
func (a *app) zone() *ledger.Knowledge {
	return a.proj.Knowledge()
}

type knowledgeListCmd struct {
	Tags   []string `name:"tag" placeholder:"TAG" help:"Only patterns with this tag; repeat for more (all must match)."`
	Search string   `placeholder:"WORDS" help:"Only patterns whose text contains every word."`
	Limit  int      `default:"20" placeholder:"N" help:"At most N patterns (1 to 100)."`
	Offset int      `placeholder:"N" help:"Skip the first N patterns."`
	Sort   string   `enum:"createdAt,updatedAt,title" default:"updatedAt" placeholder:"createdAt|updatedAt|title" help:"Sort by this field."`
	Order  string   `enum:"asc,desc" default:"desc" placeholder:"asc|desc" help:"Sort order."`
}

func (c *knowledgeListCmd) Run(a *app) error {
	page, err := a.zone().ListPatterns(a.ctx, ledger.PatternFilter{
		Tags: c.Tags, Search: c.Search, Limit: c.Limit, Offset: c.Offset, SortBy: c.Sort, SortOrder: c.Order,
	})
	if err != nil {
		return knowledgeError(err)
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, page)
	}
	if page.Total == 0 {
		if len(c.Tags) == 0 && c.Search == "" {
			fmt.Fprintf(a.env.Stderr, "no patterns in project %s; 'thoughtbox knowledge create' adds one\n", a.cfg.Project)
		} else {
			fmt.Fprintln(a.env.Stderr, "no pattern matches")
		}
		return nil
	}
	tw := tabwriter.NewWriter(a.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTITLE\tTAGS\tUPDATED")
	for _, p := range page.Patterns {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, clip(p.Title, 48), clip(strings.Join(p.Tags, ","), 32), stamp(p.UpdatedAt))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if shown := len(page.Patterns); page.HasMore || (shown == 0 && page.Total > 0) {
		fmt.Fprintf(a.env.Stderr, "%d of %d matching patterns shown; --offset %d for more\n", shown, page.Total, page.Offset+page.Limit)
	}
	return nil
}

type knowledgeShowCmd struct {
	ID string `arg:"" name:"id" help:"Pattern id."`
}

func (c *knowledgeShowCmd) Run(a *app) error {
	p, err := a.zone().Pattern(a.ctx, c.ID)
	if err != nil {
		return knowledgeError(err)
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, p)
	}
	return printPattern(a.env.Stdout, p)
}

// printPattern shows a pattern as a person reads it: its fields, a blank
// line, then the Markdown content as written.
func printPattern(w io.Writer, p ledger.KnowledgePattern) error {
	fmt.Fprintf(w, "%s  %s\n", p.ID, p.Title)
	fmt.Fprintf(w, "description: %s\n", p.Description)
	if len(p.Tags) > 0 {
		fmt.Fprintf(w, "tags: %s\n", strings.Join(p.Tags, ", "))
	}
	if len(p.DerivedFromSessions) > 0 {
		fmt.Fprintf(w, "derived from: %s\n", strings.Join(p.DerivedFromSessions, ", "))
	}
	created := "created: " + stamp(p.CreatedAt)
	if p.CreatedBy != "" {
		created += " by " + p.CreatedBy
	}
	fmt.Fprintln(w, created)
	fmt.Fprintf(w, "updated: %s\n\n", stamp(p.UpdatedAt))
	_, err := fmt.Fprintln(w, strings.TrimRight(p.Content, "\n"))
	return err
}

type knowledgeCreateCmd struct {
	Title       string   `required:"" placeholder:"TEXT" help:"Title (at most 200 characters)."`
	Description string   `required:"" placeholder:"TEXT" help:"One or two sentences saying what the pattern is for."`
	Content     *string  `placeholder:"TEXT" help:"The pattern, in Markdown; - or omitted reads it from standard input."`
	ID          string   `placeholder:"ID" help:"Id (^[a-z0-9-]+$; default: a slug of the title)."`
	Tags        []string `name:"tag" placeholder:"TAG" help:"A tag; repeat the flag for more."`
	Sessions    []string `name:"from-session" placeholder:"SESSION" help:"A session the pattern was derived from; repeat for more."`
}

// Validate checks the flags' values (exit 2).
func (c *knowledgeCreateCmd) Validate() error {
	if c.Content != nil && strings.TrimSpace(*c.Content) == "" {
		return errors.New("--content must not be empty (- or no --content reads standard input)")
	}
	if err := checkTitle("--title", &c.Title); err != nil {
		return err
	}
	return checkID("--id", c.ID)
}

func (c *knowledgeCreateCmd) Run(a *app) error {
	content, err := a.contentArg(c.Content)
	if err != nil {
		return err
	}
	sessions, err := a.resolveAll(c.Sessions)
	if err != nil {
		return err
	}
	p, err := a.zone().CreatePattern(a.ctx, ledger.CreatePatternParams{
		ID: c.ID, Title: c.Title, Description: c.Description, Tags: c.Tags, Content: content,
		DerivedFromSessions: sessions,
	}, a.author())
	if err != nil {
		return knowledgeError(err)
	}
	a.memoryNote()
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, p)
	}
	_, err = fmt.Fprintln(a.env.Stdout, p.ID)
	return err
}

type knowledgeUpdateCmd struct {
	ID          string   `arg:"" name:"id" help:"Pattern id."`
	Title       *string  `placeholder:"TEXT" help:"New title."`
	Description *string  `placeholder:"TEXT" help:"New description."`
	Content     *string  `placeholder:"TEXT" help:"New content; - reads it from standard input."`
	Tags        []string `name:"tag" placeholder:"TAG" help:"Replace the tags with these; repeat the flag for more."`
	NoTags      bool     `name:"no-tags" help:"Remove every tag."`
	Sessions    []string `name:"from-session" placeholder:"SESSION" help:"Replace the sessions the pattern was derived from; repeat for more."`
}

// Validate checks flag combinations kong cannot express (exit 2).
func (c *knowledgeUpdateCmd) Validate() error {
	if c.NoTags && len(c.Tags) > 0 {
		return errors.New("--no-tags and --tag cannot be combined")
	}
	if c.Title == nil && c.Description == nil && c.Content == nil && len(c.Tags) == 0 && !c.NoTags && len(c.Sessions) == 0 {
		return errors.New("nothing to update: give --title, --description, --content, --tag, --no-tags or --from-session")
	}
	if c.Title != nil && strings.TrimSpace(*c.Title) == "" {
		return errors.New("--title must not be empty")
	}
	return checkTitle("--title", c.Title)
}

func (c *knowledgeUpdateCmd) Run(a *app) error {
	p := ledger.UpdatePatternParams{ID: c.ID, Title: c.Title, Description: c.Description}
	if c.Content != nil {
		content, err := a.contentArg(c.Content)
		if err != nil {
			return err
		}
		p.Content = &content
	}
	if len(c.Tags) > 0 || c.NoTags {
		tags := append([]string{}, c.Tags...)
		p.Tags = &tags
	}
	if len(c.Sessions) > 0 {
		sessions, err := a.resolveAll(c.Sessions)
		if err != nil {
			return err
		}
		p.DerivedFromSessions = &sessions
	}
	pat, err := a.zone().UpdatePattern(a.ctx, p, a.author())
	if err != nil {
		return knowledgeError(err)
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, pat)
	}
	_, err = fmt.Fprintf(a.env.Stdout, "pattern %s updated\n", pat.ID)
	return err
}

type knowledgeDeleteCmd struct {
	ID string `arg:"" name:"id" help:"Pattern id."`
}

// deleted is the JSON form of a delete.
type deleted struct {
	Deleted bool   `json:"deleted"`
	Kind    string `json:"kind"`
	ID      string `json:"id"`
	Title   string `json:"title"`
}

func (c *knowledgeDeleteCmd) Run(a *app) error {
	p, err := a.zone().DeletePattern(a.ctx, c.ID, a.author())
	if err != nil {
		return knowledgeError(err)
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, deleted{true, string(ledger.KindPattern), p.ID, p.Title})
	}
	_, err = fmt.Fprintf(a.env.Stdout, "pattern %s deleted\n", p.ID)
	return err
}

type knowledgeTagsCmd struct{}

func (c *knowledgeTagsCmd) Run(a *app) error {
	tags, err := a.zone().PatternTags(a.ctx)
	if err != nil {
		return knowledgeError(err)
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, tags)
	}
	if len(tags) == 0 {
		fmt.Fprintln(a.env.Stderr, "no tagged patterns")
		return nil
	}
	tw := tabwriter.NewWriter(a.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TAG\tPATTERNS")
	for _, t := range tags {
		fmt.Fprintf(tw, "%s\t%d\n", t.Name, t.Count)
	}
	return tw.Flush()
}

type noteListCmd struct{ pageFlags }

func (c *noteListCmd) Run(a *app) error {
	notes, err := a.zone().ListNotes(a.ctx)
	if err != nil {
		return knowledgeError(err)
	}
	total := len(notes)
	from, to := c.cut(total)
	notes = notes[from:to]
	defer c.more(a.env.Stderr, len(notes), total, "notes")
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, notes)
	}
	if total == 0 {
		fmt.Fprintf(a.env.Stderr, "no notes in project %s; 'thoughtbox knowledge notes write' adds one\n", a.cfg.Project)
		return nil
	}
	tw := tabwriter.NewWriter(a.env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTITLE\tUPDATED")
	for _, n := range notes {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", n.ID, clip(n.Title, 48), stamp(n.UpdatedAt))
	}
	return tw.Flush()
}

type noteShowCmd struct {
	ID string `arg:"" name:"id" help:"Note id."`
}

func (c *noteShowCmd) Run(a *app) error {
	n, err := a.zone().Note(a.ctx, c.ID)
	if err != nil {
		return knowledgeError(err)
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, n)
	}
	fmt.Fprintf(a.env.Stdout, "%s  %s\nupdated: %s\n\n", n.ID, n.Title, stamp(n.UpdatedAt))
	_, err = fmt.Fprintln(a.env.Stdout, strings.TrimRight(n.Content, "\n"))
	return err
}

type noteWriteCmd struct {
	ID      string  `arg:"" optional:"" name:"id" help:"Note id (^[a-z0-9-]+$; default: a slug of the title)."`
	Title   string  `placeholder:"TEXT" help:"Title; required for a new note, kept when omitted."`
	Content *string `placeholder:"TEXT" help:"The note, in Markdown; - or omitted reads it from standard input."`
}

func (c *noteWriteCmd) Run(a *app) error {
	content, err := a.contentArg(c.Content)
	if err != nil {
		return err
	}
	w, err := a.zone().WriteNote(a.ctx, ledger.WriteNoteParams{ID: c.ID, Title: c.Title, Content: content}, a.author())
	if err != nil {
		return knowledgeError(err)
	}
	a.memoryNote()
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, w)
	}
	verb := "replaced"
	if w.Created {
		verb = "created"
	}
	_, err = fmt.Fprintf(a.env.Stdout, "note %s %s\n", w.Note.ID, verb)
	return err
}

type noteDeleteCmd struct {
	ID string `arg:"" name:"id" help:"Note id."`
}

func (c *noteDeleteCmd) Run(a *app) error {
	n, err := a.zone().DeleteNote(a.ctx, c.ID, a.author())
	if err != nil {
		return knowledgeError(err)
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, deleted{true, string(ledger.KindNote), n.ID, n.Title})
	}
	_, err = fmt.Fprintf(a.env.Stdout, "note %s deleted\n", n.ID)
	return err
}

// contentArg is the text of a --content flag: the flag's value, or
// standard input when it is "-" or absent. A terminal is not read from:
// the command would otherwise sit waiting for input nobody knows to type.
func (a *app) contentArg(flag *string) (string, error) {
	if flag != nil && *flag != "-" {
		return *flag, nil
	}
	if f, ok := a.env.Stdin.(*os.File); ok && flag == nil {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return "", &failure{msg: "content: is required", hints: []string{"give --content TEXT, or pipe the content on standard input"}}
		}
	}
	b, err := io.ReadAll(a.env.Stdin)
	if err != nil {
		return "", fmt.Errorf("read the content from standard input: %w", err)
	}
	// The newline that ends what was piped in is not part of the text, as
	// for add -.
	return strings.TrimRight(string(b), "\n"), nil
}

// memoryNote warns that THOUGHTBOX_STORAGE=memory keeps nothing.
func (a *app) memoryNote() {
	if a.cfg.Storage == config.StorageMemory {
		fmt.Fprintln(a.env.Stderr, "note: THOUGHTBOX_STORAGE=memory: nothing written here outlives this command")
	}
}

// knowledgeFlags names the command-line spelling of the knowledge fields.
var knowledgeFlags = map[string]string{
	"title":               "--title",
	"description":         "--description",
	"content":             "--content (or standard input)",
	"tags":                "--tag",
	"derivedFromSessions": "--from-session",
	"limit":               "--limit",
	"offset":              "--offset",
}

// knowledgeError reports a knowledge-zone error with hints in command-line
// terms; the session hints of report would name the wrong flags.
func knowledgeError(err error) error {
	var e *ledger.Error
	if !errors.As(err, &e) || e.Code != ledger.CodeInvalidPayload {
		return err
	}
	f := &failure{msg: e.Message}
	switch field, _ := e.Details["field"].(string); {
	case errors.Is(err, ledger.ErrKnowledgeNotFound):
		if e.Details["kind"] == string(ledger.KindNote) {
			f.hints = append(f.hints, "'thoughtbox knowledge notes list' lists the notes")
		} else {
			f.hints = append(f.hints, "'thoughtbox knowledge list' lists the patterns")
		}
	case e.Details["exists"] == true:
		f.hints = append(f.hints, "'thoughtbox knowledge update <id>' changes it; --id gives the new pattern another id")
	case knowledgeFlags[field] != "":
		f.hints = append(f.hints, fmt.Sprintf("%s is given as %s", field, knowledgeFlags[field]))
	}
	return f
}

// resolveAll resolves --from-session values as every session argument is
// resolved: a unique prefix names a session, and a session that does not
// exist is refused rather than recorded as a dangling reference.
func (a *app) resolveAll(prefixes []string) ([]string, error) {
	var out []string
	for _, p := range prefixes {
		id, err := a.resolve(p)
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}
