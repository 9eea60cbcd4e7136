package ledger

// The knowledge zone's checks: what a pattern's or a note's fields must
// be, how an id is derived from a title, and the errors a caller sees.

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// entry validates and normalises the parameters of a new pattern; derived
// reports that the id came from the title.
func (p CreatePatternParams) entry() (e KnowledgeEntry, derived bool, err error) {
	e.Kind = KindPattern
	if e.Title, err = checkTitle(p.Title); err != nil {
		return e, false, err
	}
	if e.ID, derived, err = entryID(p.ID, e.Title); err != nil {
		return e, false, err
	}
	if e.Description, err = checkText("description", p.Description, true); err != nil {
		return e, false, err
	}
	if err = checkContent(p.Content); err != nil {
		return e, false, err
	}
	e.Content = p.Content
	if e.Tags, err = normalizeTags(p.Tags); err != nil {
		return e, false, err
	}
	if e.DerivedFromSessions, err = normalizeSessionRefs(p.DerivedFromSessions); err != nil {
		return e, false, err
	}
	if e.CreatedBy, err = checkText("createdBy", p.CreatedBy, false); err != nil {
		return e, false, err
	}
	if strings.IndexFunc(e.CreatedBy, unicode.IsControl) >= 0 {
		return e, false, InvalidField("createdBy", "must be one line without control characters")
	}
	return e, derived, nil
}

// entryID is the given id, checked, or else a slug of the title.
func entryID(id, title string) (string, bool, error) {
	if id != "" {
		return id, false, checkKnowledgeID(id)
	}
	if strings.TrimSpace(title) == "" {
		return "", false, InvalidField("id", "is required (or give a title to derive it from)")
	}
	s := Slug(title)
	if s == "" {
		return "", false, InvalidField("id", "cannot be derived from title %q (no letters or digits a-z, 0-9); give an id matching ^[a-z0-9-]+$", title).
			with("pattern", "^[a-z0-9-]+$")
	}
	return s, true, nil
}

// Slug turns a title into an id matching ^[a-z0-9-]+$: lower case, every
// run of other characters a single hyphen, at most 64 bytes (cut at a
// hyphen when it can be). "Self-test: bisect a regression" becomes
// "self-test-bisect-a-regression". It is "" when the title has no ASCII
// letter or digit.
func Slug(title string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(title) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(r)
			continue
		}
		hyphen = true
	}
	s := b.String()
	if len(s) > maxDerivedIDLength {
		midWord := s[maxDerivedIDLength] != '-'
		s = s[:maxDerivedIDLength]
		if i := strings.LastIndexByte(s, '-'); midWord && i >= maxDerivedIDLength/2 {
			s = s[:i]
		}
		s = strings.TrimRight(s, "-")
	}
	return s
}

// ValidKnowledgeID reports whether id can name a pattern or note: 1 to
// MaxKnowledgeIDLength bytes matching ^[a-z0-9-]+$.
func ValidKnowledgeID(id string) bool {
	if id == "" || len(id) > MaxKnowledgeIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z') && !(c >= '0' && c <= '9') && c != '-' {
			return false
		}
	}
	return true
}

func checkKnowledgeID(id string) error {
	if id == "" {
		return InvalidField("id", "is required")
	}
	if !ValidKnowledgeID(id) {
		return InvalidField("id", "must match ^[a-z0-9-]+$ and have at most %d characters, got %q", MaxKnowledgeIDLength, id).
			with("pattern", "^[a-z0-9-]+$")
	}
	return nil
}

// checkTitle trims a title and requires one line of 1 to MaxTitleLength
// characters.
func checkTitle(s string) (string, error) {
	t, err := checkText("title", s, true)
	if err != nil {
		return "", err
	}
	if n := utf8.RuneCountInString(t); n > MaxTitleLength {
		return "", InvalidField("title", "must be at most %d characters, got %d", MaxTitleLength, n).with("maxLength", MaxTitleLength)
	}
	if strings.IndexFunc(t, unicode.IsControl) >= 0 {
		return "", InvalidField("title", "must be one line without control characters")
	}
	return t, nil
}

// checkText trims a front-matter text field; required ones must not be
// blank.
func checkText(field, s string, required bool) (string, error) {
	if !utf8.ValidString(s) {
		return "", InvalidField(field, "must be valid UTF-8")
	}
	t := strings.TrimSpace(s)
	if required && t == "" {
		return "", InvalidField(field, "is required and must not be blank")
	}
	return t, nil
}

func checkContent(s string) error {
	if strings.TrimSpace(s) == "" {
		return InvalidField("content", "is required and must not be blank")
	}
	if len(s) > MaxKnowledgeContentBytes {
		return InvalidField("content", "must be at most %d bytes, got %d", MaxKnowledgeContentBytes, len(s)).
			with("maxBytes", MaxKnowledgeContentBytes)
	}
	return nil
}

// normalizeTags trims tags and drops blank and repeated ones, keeping the
// first occurrence's order; a tag is one line of at most 100 characters.
func normalizeTags(tags []string) ([]string, error) {
	out := []string{}
	for i, t := range tags {
		t = strings.TrimSpace(t)
		switch {
		case t == "" || slices.Contains(out, t):
			continue
		case !utf8.ValidString(t) || strings.IndexFunc(t, unicode.IsControl) >= 0:
			return nil, InvalidField("tags", "tag %d (%q) must be one line of valid UTF-8", i+1, t)
		case utf8.RuneCountInString(t) > maxKnowledgeTagLength:
			return nil, InvalidField("tags", "tag %d must be at most %d characters", i+1, maxKnowledgeTagLength)
		}
		out = append(out, t)
	}
	return out, nil
}

// normalizeSessionRefs trims session ids, lowercases them and drops blank
// and repeated ones. The store names sessions in lowercase letters, digits
// and hyphens; a UUID given in capitals (as some tools print them) names
// the same session, so it is kept as the store spells it rather than
// recorded as an id no session has.
func normalizeSessionRefs(ids []string) ([]string, error) {
	out := []string{}
	for i, s := range ids {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" || slices.Contains(out, s) {
			continue
		}
		if len(s) > 128 || strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return nil, InvalidField("derivedFromSessions", "item %d (%q) is not a session id (letters, digits and hyphens)", i+1, s)
		}
		out = append(out, s)
	}
	return out, nil
}

// oneLineOf keeps the first line of s, trimmed: an author name becomes
// createdBy, which is one line.
func oneLineOf(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(line)
}

func knowledgeNotFound(kind KnowledgeKind, id string) *Error {
	e := &Error{Code: CodeInvalidPayload, Message: fmt.Sprintf("id: %s %q not found in the knowledge zone", kind, id), Err: ErrKnowledgeNotFound}
	return e.with("field", "id").with("id", id).with("kind", string(kind))
}

func idTaken(kind KnowledgeKind, id string, derived bool) *Error {
	how := ""
	if derived {
		how = " (derived from the title)"
	}
	return InvalidField("id", "%s %q%s already exists; update it, or give another id", kind, id, how).
		with("id", id).with("kind", string(kind)).with("exists", true)
}

// normalizeListing fills in and checks the paging and ordering that
// session and pattern listings share (seed 002): limit 1..max (0 means
// def), offset >= 0, sortBy createdAt|updatedAt|title (default updatedAt),
// sortOrder asc|desc (default desc). Errors name the field.
func normalizeListing(limit, offset *int, sortBy, sortOrder *string, def, max int) error {
	switch {
	case *limit == 0:
		*limit = def
	case *limit < 1 || *limit > max:
		return InvalidField("limit", "must be from 1 to %d, got %d", max, *limit)
	}
	if *offset < 0 {
		return InvalidField("offset", "must be 0 or more, got %d", *offset)
	}
	switch *sortBy {
	case "":
		*sortBy = SortByUpdatedAt
	case SortByCreatedAt, SortByUpdatedAt, SortByTitle:
	default:
		return InvalidField("sortBy", "must be createdAt, updatedAt or title, got %q", *sortBy)
	}
	switch *sortOrder {
	case "":
		*sortOrder = SortDesc
	case SortAsc, SortDesc:
	default:
		return InvalidField("sortOrder", "must be asc or desc, got %q", *sortOrder)
	}
	return nil
}
