// Package fsck makes the checks `git fsck --strict` makes of commits and
// trees (git's fsck.c: fsck_commit, fsck_ident, fsck_tree), with strict's
// promotion of warnings to errors, so that a ledger's verify cannot say OK
// where git fsck would not. Each problem names git's message id
// (badTimezone, treeNotSorted, ...). It has no state and no locks.
package fsck

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// Commit checks a commit's header as git fsck --strict does.
func Commit(data []byte) error {
	// verify_headers: no NUL in the header, which must end in "\n\n" or
	// at least with a newline.
	hdrEnd := bytes.Index(data, []byte("\n\n"))
	hdr := data
	if hdrEnd >= 0 {
		hdr = data[:hdrEnd+1]
	}
	if i := bytes.IndexByte(hdr, 0); i >= 0 {
		return fmt.Errorf("nulInHeader: NUL byte at offset %d of the header", i)
	}
	if hdrEnd < 0 && (len(data) == 0 || data[len(data)-1] != '\n') {
		return fmt.Errorf("unterminatedHeader: the header does not end with a newline")
	}
	p := data
	line := func(prefix string) ([]byte, bool) {
		rest, ok := bytes.CutPrefix(p, []byte(prefix))
		if !ok {
			return nil, false
		}
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return nil, false
		}
		p = rest[nl+1:]
		return rest[:nl], true
	}
	if !bytes.HasPrefix(p, []byte("tree ")) {
		return fmt.Errorf("missingTree: no 'tree' line")
	}
	t, _ := line("tree ")
	if !isHexID(t) {
		return fmt.Errorf("badTreeSha1: invalid 'tree' line %q", t)
	}
	for bytes.HasPrefix(p, []byte("parent ")) {
		h, _ := line("parent ")
		if !isHexID(h) {
			return fmt.Errorf("badParentSha1: invalid 'parent' line %q", h)
		}
	}
	authors := 0
	for bytes.HasPrefix(p, []byte("author ")) {
		authors++
		id, ok := line("author ")
		if !ok {
			return fmt.Errorf("missingEmail: the author line does not end")
		}
		if err := ident(id); err != nil {
			return fmt.Errorf("author: %w", err)
		}
	}
	switch {
	case authors == 0:
		return fmt.Errorf("missingAuthor: no 'author' line")
	case authors > 1:
		return fmt.Errorf("multipleAuthors: %d 'author' lines", authors)
	}
	if !bytes.HasPrefix(p, []byte("committer ")) {
		return fmt.Errorf("missingCommitter: no 'committer' line")
	}
	id, ok := line("committer ")
	if !ok {
		return fmt.Errorf("missingEmail: the committer line does not end")
	}
	if err := ident(id); err != nil {
		return fmt.Errorf("committer: %w", err)
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return fmt.Errorf("nulInCommit: NUL byte at offset %d of the commit", i)
	}
	return nil
}

func isHexID(b []byte) bool {
	if len(b) != 40 {
		return false
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ident checks "name <email> date zone" (the line without its newline)
// as git's fsck_ident does.
func ident(p []byte) error {
	if len(p) > 0 && p[0] == '<' {
		return fmt.Errorf("missingNameBeforeEmail: no name before the email")
	}
	lt := bytes.IndexAny(p, "<>")
	switch {
	case lt < 0:
		return fmt.Errorf("missingEmail: no email")
	case p[lt] == '>':
		return fmt.Errorf("badName: '>' in the name")
	case p[lt-1] != ' ':
		return fmt.Errorf("missingSpaceBeforeEmail: no space before the email")
	}
	p = p[lt+1:]
	gt := bytes.IndexAny(p, "<>")
	if gt < 0 || p[gt] == '<' {
		return fmt.Errorf("badEmail: the email is not closed by '>'")
	}
	p = p[gt+1:]
	if len(p) == 0 || p[0] != ' ' {
		return fmt.Errorf("missingSpaceBeforeDate: no space before the date")
	}
	p = p[1:]
	if len(p) > 1 && p[0] == '0' && p[1] != ' ' {
		return fmt.Errorf("zeroPaddedDate: the date has a leading zero")
	}
	n := 0
	for n < len(p) && p[n] >= '0' && p[n] <= '9' {
		n++
	}
	if n > 0 {
		if _, err := strconv.ParseUint(string(p[:n]), 10, 64); err != nil || n > 19 {
			return fmt.Errorf("badDateOverflow: the date %q overflows", p[:n])
		}
	}
	if n == 0 || n >= len(p) || p[n] != ' ' {
		return fmt.Errorf("badDate: the date is not a number followed by a space")
	}
	z := p[n+1:]
	if len(z) != 5 || (z[0] != '+' && z[0] != '-') || strings.Trim(string(z[1:]), "0123456789") != "" {
		return fmt.Errorf("badTimezone: time zone %q is not +hhmm or -hhmm", z)
	}
	return nil
}

// Tree checks a tree's entries as git's fsck_tree does with --strict.
func Tree(data []byte) error {
	var prevName []byte
	prevDir := false
	first := true
	var problems []string
	seen := map[string]bool{}
	add := func(p string) {
		if !seen[p] {
			seen[p] = true
			problems = append(problems, p)
		}
	}
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp <= 0 {
			return fmt.Errorf("badTree: an entry has no mode")
		}
		mode := data[:sp]
		for _, c := range mode {
			if c < '0' || c > '7' {
				return fmt.Errorf("badTree: mode %q is not octal", mode)
			}
		}
		rest := data[sp+1:]
		nul := bytes.IndexByte(rest, 0)
		if nul < 0 || len(rest) < nul+1+20 {
			return fmt.Errorf("badTree: truncated entry")
		}
		name := rest[:nul]
		var id object.Hash
		copy(id[:], rest[nul+1:nul+21])
		data = rest[nul+21:]
		m, _ := strconv.ParseUint(string(mode), 8, 32)
		dir := m&0o170000 == 0o040000
		if mode[0] == '0' {
			add("zeroPaddedFilemode: a mode has a leading zero")
		}
		switch m {
		case 0o100755, 0o100644, 0o120000, 0o040000, 0o160000:
		default:
			add(fmt.Sprintf("badFilemode: entry %q has mode %s", name, mode))
		}
		if id == object.ZeroHash {
			add(fmt.Sprintf("nullSha1: entry %q has the null object id", name))
		}
		switch {
		case len(name) == 0:
			add("emptyName: an entry has an empty name")
		case bytes.IndexByte(name, '/') >= 0:
			add(fmt.Sprintf("fullPathname: entry %q contains '/'", name))
		case string(name) == ".":
			add("hasDot: an entry is named '.'")
		case string(name) == "..":
			add("hasDotdot: an entry is named '..'")
		case isDotGit(name):
			add(fmt.Sprintf("hasDotgit: entry %q is .git", name))
		}
		if !first {
			switch c := compareTreeNames(prevName, prevDir, name, dir); {
			case c == 0 || (bytes.Equal(prevName, name)):
				add(fmt.Sprintf("duplicateEntries: %q appears twice", name))
			case c > 0:
				add(fmt.Sprintf("treeNotSorted: %q comes after %q", name, prevName))
			}
		}
		first, prevName, prevDir = false, name, dir
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// compareTreeNames orders two entries as git does: a directory's name
// compares as if it ended in '/'.
func compareTreeNames(a []byte, aDir bool, b []byte, bDir bool) int {
	ka, kb := string(a), string(b)
	if aDir {
		ka += "/"
	}
	if bDir {
		kb += "/"
	}
	return strings.Compare(ka, kb)
}

// isDotGit reports names git treats as ".git" on some file system: any
// case, and the NTFS short name GIT~1, and trailing dots or spaces.
func isDotGit(name []byte) bool {
	n := strings.TrimRight(strings.ToLower(string(name)), ". ")
	return n == ".git" || n == "git~1"
}
