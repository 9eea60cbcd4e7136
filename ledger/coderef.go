package ledger

import (
	"path"
	"strings"
)

// CodeRef names the code a thought is about: a commit, a file (a path
// relative to the repository's root, with '/' between folders), a range of
// its lines, or a file as of a commit. Paths are normalized (NormalizeCode)
// so that the same file is spelled one way in every thought, which is what
// lets blame and why find the thoughts about a file.
type CodeRef struct {
	Commit string `json:"commit,omitempty" jsonschema:"A commit id (7 to 40 hex digits)."`
	Path   string `json:"path,omitempty" jsonschema:"A file, relative to the repository's root (folders separated by /)."`
	From   int    `json:"from,omitempty" jsonschema:"First line of the range (1-based); needs path."`
	To     int    `json:"to,omitempty" jsonschema:"Last line of the range; needs from; defaults to from."`
}

// MaxCodeRefs is the most code references one thought may carry.
const MaxCodeRefs = 32

// maxCodePath bounds a referenced path, as git bounds none but a thought
// file should stay readable.
const maxCodePath = 4096

// NormalizeCode checks a thought's code references and returns them
// normalized: paths cleaned ("./a//b" is "a/b"), commit ids in lowercase,
// To set to From for a single line. A bad reference is an error naming
// code[i] and what was expected.
func NormalizeCode(refs []CodeRef) ([]CodeRef, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	if len(refs) > MaxCodeRefs {
		return nil, InvalidField("code", "has %d references; at most %d are accepted", len(refs), MaxCodeRefs)
	}
	out := make([]CodeRef, len(refs))
	for i, r := range refs {
		n, err := normalizeCodeRef(r)
		if err != nil {
			e := InvalidField(codeField(i), "%s", err.Error())
			return nil, e
		}
		out[i] = n
	}
	return out, nil
}

func codeField(i int) string { return "code[" + itoa(i) + "]" }

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

type codeRefError string

func (e codeRefError) Error() string { return string(e) }

func normalizeCodeRef(r CodeRef) (CodeRef, error) {
	if r.Commit == "" && r.Path == "" {
		return r, codeRefError("needs a commit or a path")
	}
	if r.Commit != "" {
		c := strings.ToLower(r.Commit)
		if len(c) < 7 || len(c) > 40 || strings.Trim(c, "0123456789abcdef") != "" {
			return r, codeRefError("commit " + quote(r.Commit) + " is not a commit id: expected 7 to 40 hex digits")
		}
		r.Commit = c
	}
	if r.Path != "" {
		p, err := normalizeCodePath(r.Path)
		if err != nil {
			return r, err
		}
		r.Path = p
	}
	switch {
	case r.From < 0 || r.To < 0:
		return r, codeRefError("from and to must be line numbers (1 or more)")
	case r.From == 0 && r.To != 0:
		return r, codeRefError("to needs from")
	case r.From != 0 && r.Path == "":
		return r, codeRefError("a line range needs a path")
	case r.To != 0 && r.To < r.From:
		return r, codeRefError("to (" + itoa(r.To) + ") is before from (" + itoa(r.From) + ")")
	case r.From != 0 && r.To == 0:
		r.To = r.From
	}
	return r, nil
}

func normalizeCodePath(p string) (string, error) {
	switch {
	case len(p) > maxCodePath:
		return "", codeRefError("path is longer than " + itoa(maxCodePath) + " bytes")
	case strings.ContainsAny(p, "\x00\\"):
		return "", codeRefError("path " + quote(p) + " holds a NUL or a backslash: expected folders separated by /")
	case strings.HasPrefix(p, "/") || (len(p) > 1 && p[1] == ':'):
		return "", codeRefError("path " + quote(p) + " is absolute: expected a path relative to the repository's root")
	}
	c := path.Clean(p)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", codeRefError("path " + quote(p) + " is outside the repository: expected a file below its root")
	}
	for _, part := range strings.Split(c, "/") {
		if part == ".git" {
			return "", codeRefError("path " + quote(p) + " is inside .git: expected a file of the worktree")
		}
	}
	return c, nil
}

func quote(s string) string { return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\"" }

// String is how show and the Markdown export print a reference:
// path:from-to, path:line, path, or a commit; a path as of a commit is
// path@commit.
func (r CodeRef) String() string {
	s := r.Path
	if r.From != 0 {
		s += ":" + itoa(r.From)
		if r.To != r.From {
			s += "-" + itoa(r.To)
		}
	}
	if r.Commit != "" {
		if s == "" {
			return r.Commit
		}
		s += "@" + r.Commit
	}
	return s
}
