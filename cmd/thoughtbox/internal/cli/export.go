package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

type exportCmd struct {
	ID             string `arg:"" name:"id" help:"Session id or unique prefix."`
	Output         string `short:"o" name:"output" placeholder:"FILE" help:"Write the export to FILE instead of standard output."`
	ResolveAnchors bool   `name:"resolve-anchors" help:"Resolve cross-session anchors (@keyword:S42, @keyword:S1-S3) and report those that do not resolve."`
}

// writesDocuments marks export as the command that takes --format
// markdown and cipher.
func (c *exportCmd) writesDocuments() {}

// exportFormat maps --format to an export format: json (also the default,
// text), markdown or cipher.
func exportFormat(f Format) ledger.ExportFormat {
	switch f {
	case FormatMarkdown:
		return ledger.ExportMarkdown
	case FormatCipher:
		return ledger.ExportCipher
	}
	return ledger.ExportJSON
}

func (c *exportCmd) Run(a *app) error {
	id, err := a.resolve(c.ID)
	if err != nil {
		return err
	}
	v, err := a.ledger.Load(a.ctx, id)
	if err != nil {
		return err
	}
	if !v.Integrity.Valid {
		fmt.Fprintf(a.env.Stderr, "warning: session %s is damaged; exporting what could be read ('thoughtbox verify %s' tells more)\n", id, id)
	}
	var anchors *ledger.AnchorReport
	if c.ResolveAnchors {
		if anchors, err = a.ledger.ResolveAnchors(a.ctx, v); err != nil {
			return err
		}
		for _, u := range anchors.Unresolved {
			fmt.Fprintf(a.env.Stderr, "warning: anchor %s in thought %d does not resolve: %s\n", u.Text, u.SourceThought, u.Reason)
		}
	}
	doc, err := ledger.Export(v, ledger.ExportOptions{Format: exportFormat(a.format), At: time.Now().UTC(), Anchors: anchors})
	if err != nil {
		return err
	}
	if c.Output == "" || c.Output == "-" {
		_, err = a.env.Stdout.Write(doc)
		return err
	}
	if err := os.WriteFile(c.Output, doc, 0o644); err != nil {
		return &failure{msg: fmt.Sprintf("write the export: %v", err), hints: []string{"-o names the file to write; leave it out to write to standard output"}}
	}
	return nil
}

// checkFormat refuses --format markdown and cipher for commands that do not
// write documents (a usage error): they write text or json.
func checkFormat(f Format, cmd any) error {
	if f == FormatText || f == FormatJSON {
		return nil
	}
	if _, ok := cmd.(interface{ writesDocuments() }); ok {
		return nil
	}
	return fmt.Errorf("--format %s: only 'thoughtbox export' writes %s; other commands write text or json", f, strings.Join([]string{string(FormatMarkdown), string(FormatCipher)}, " or "))
}
