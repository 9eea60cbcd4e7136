package cli

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/kong"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/project"
)

// The checks below refuse a command line that is wrong in itself with exit
// 2, before any ledger is opened; what only the ledger can judge (a thought
// that does not exist, a taken id) stays a refusal with exit 1.

// checkEmptyValues refuses an argument or flag given as an empty (or
// blank) string: it is a mistake, never a request for the default. Flags
// tagged emptyok (a description that may be cleared) are exempt; pointer
// flags are checked by their command, which knows what empty means there.
func checkEmptyValues(kctx *kong.Context) error {
	for _, p := range kctx.Path {
		var v *kong.Value
		name := ""
		switch {
		case p.Positional != nil:
			v, name = p.Positional, "<"+p.Positional.Name+">"
		case p.Flag != nil:
			v, name = p.Flag.Value, "--"+p.Flag.Name
		default:
			continue
		}
		if v.Tag != nil && v.Tag.Has("emptyok") || !v.Target.IsValid() {
			continue
		}
		t := v.Target
		switch {
		case t.Kind() == reflect.String:
			if strings.TrimSpace(t.String()) == "" {
				return fmt.Errorf("%s must not be empty", name)
			}
		case t.Kind() == reflect.Slice && t.Type().Elem().Kind() == reflect.String:
			if t.Len() == 0 { // kong reads '' as no element at all
				return fmt.Errorf("%s must not be empty", name)
			}
			for i := range t.Len() {
				if strings.TrimSpace(t.Index(i).String()) == "" {
					return fmt.Errorf("%s must not be empty", name)
				}
			}
		}
	}
	return nil
}

// checkPage checks the --limit and --offset of a listing that pages.
func checkPage(limit, offset, most int) error {
	if limit < 1 || limit > most {
		return fmt.Errorf("--limit must be from 1 to %d, got %d", most, limit)
	}
	if offset < 0 {
		return fmt.Errorf("--offset must be at least 0, got %d", offset)
	}
	return nil
}

// checkTitle refuses a title (of a session or a pattern) longer than the
// ledger keeps.
func checkTitle(name string, title *string) error {
	if title == nil {
		return nil
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(*title)); n > ledger.MaxTitleLength {
		return fmt.Errorf("%s must be at most %d characters, got %d", name, ledger.MaxTitleLength, n)
	}
	return nil
}

// checkBranch applies the ledger's branch-id rule (NewBranchID: pattern and
// length) to a flag, so that the command line refuses at exit 2 exactly
// the ids MCP refuses.
func checkBranch(flag, v string) error {
	if v == "" {
		return nil
	}
	if _, err := ledger.NewBranchID(v); err != nil {
		return fmt.Errorf("%s %s", flag, strings.TrimPrefix(err.Error(), "branchId: "))
	}
	return nil
}

// idRE is the form of knowledge ids.
var idRE = regexp.MustCompile(`^[a-z0-9-]+$`)

func checkID(flag, v string) error {
	if v != "" && !idRE.MatchString(v) {
		return fmt.Errorf("%s must match ^[a-z0-9-]+$ (lower-case letters, digits and '-'), got %q", flag, v)
	}
	return nil
}

// Validate checks the query and the flags' values (exit 2).
func (c *searchCmd) Validate() error {
	q := strings.Join(c.Query, " ")
	if strings.TrimSpace(q) != "" && !strings.ContainsFunc(q, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
		return fmt.Errorf("<query> must contain at least one letter or digit, got %q", q)
	}
	return checkPage(c.Limit, c.Offset, 100)
}

// Validate checks the flags' values (exit 2).
func (c *knowledgeListCmd) Validate() error { return checkPage(c.Limit, c.Offset, 100) }

// Validate checks the note's id (exit 2).
func (c *noteWriteCmd) Validate() error { return checkID("<id>", c.ID) }

// Validate checks the remote's name (exit 2).
func (c *remoteAddCmd) Validate() error {
	if strings.TrimSpace(c.Name) == "" {
		return fmt.Errorf("<name> must not be empty")
	}
	if err := project.ValidRemoteName(c.Name); err != nil {
		return fmt.Errorf("<name>: %v", err)
	}
	return nil
}
