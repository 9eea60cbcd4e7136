package ledger

import (
	"fmt"
	"time"
)

// CodeLink says that a commit of the code repository a ledger lives in
// was made with the reasoning of a session. It is an entry of that
// session's ledger (gitstore keeps a session's links on a ref of their
// own), so it is versioned and shared with the session; derived indexes
// of links are local and rebuilt from these.
type CodeLink struct {
	// Commit is the full id of the linked commit.
	Commit string `json:"commit"`
	// Session is the session the commit is linked to.
	Session string `json:"sessionId"`
	// Thoughts are the thoughts of the session whose code references
	// name a file the commit changed (or the commit itself).
	Thoughts []LinkedThought `json:"thoughts,omitempty"`
	// Files are the files the commit changed, relative to the
	// repository's root.
	Files []string `json:"files"`
	// PatchID is git patch-id --stable of the commit's diff ("" for a
	// commit without one, such as a merge): equal patch ids find the
	// commit again after a rebase done elsewhere.
	PatchID string `json:"patchId,omitempty"`
	// Via says how the link was made.
	Via LinkVia `json:"via"`
	// From is the commit the link was carried from (amend, rebase,
	// cherry-pick, relink); "" for a link made at commit time.
	From string `json:"from,omitempty"`
	// At is when the link was recorded.
	At time.Time `json:"at"`
}

// LinkedThought names one thought of a linked session.
type LinkedThought struct {
	Number int    `json:"thoughtNumber"`
	Branch string `json:"branchId,omitempty"`
}

// LinkVia is how a link came to be.
type LinkVia string

// The ways a link is made.
const (
	// ViaCommit: the commit's own Thoughtbox-Session trailer, read after
	// git made it.
	ViaCommit LinkVia = "commit"
	// ViaAmend and ViaRebase: carried from the commit git rewrote (git
	// hands post-rewrite the map of old to new commits).
	ViaAmend  LinkVia = "amend"
	ViaRebase LinkVia = "rebase"
	// ViaCherryPick: copied from a linked commit with the same patch id.
	ViaCherryPick LinkVia = "cherry-pick"
	// ViaRelink: found by relink (equal patch id, or the commit's added
	// lines hold most of a linked commit's).
	ViaRelink LinkVia = "relink"
)

// validVia lists the LinkVia values a link may carry.
var validVia = map[LinkVia]bool{ViaCommit: true, ViaAmend: true, ViaRebase: true, ViaCherryPick: true, ViaRelink: true}

// MaxLinkFiles bounds the files one link lists: a commit that changes
// more is linked with the first ones only (the link, not the list, is
// what why needs).
const MaxLinkFiles = 1000

// Check says what is wrong with a link read from outside (a pull, a
// damaged file), naming the field; nil for a good one.
func (l *CodeLink) Check() error {
	if !fullCommitID(l.Commit) {
		return fmt.Errorf("commit %q: expected 40 lowercase hex digits", l.Commit)
	}
	if l.From != "" && !fullCommitID(l.From) {
		return fmt.Errorf("from %q: expected 40 lowercase hex digits", l.From)
	}
	if l.Session == "" || len(l.Session) > 128 {
		return fmt.Errorf("sessionId %q: expected 1 to 128 characters", l.Session)
	}
	if !validVia[l.Via] {
		return fmt.Errorf("via %q: expected commit, amend, rebase, cherry-pick or relink", l.Via)
	}
	if len(l.Files) > MaxLinkFiles {
		return fmt.Errorf("files: %d listed, expected at most %d", len(l.Files), MaxLinkFiles)
	}
	for _, f := range l.Files {
		if f == "" || len(f) > maxCodePath {
			return fmt.Errorf("files: %q: expected a path of 1 to %d bytes", f, maxCodePath)
		}
	}
	if len(l.PatchID) > 64 {
		return fmt.Errorf("patchId: expected at most 64 characters")
	}
	for _, t := range l.Thoughts {
		if t.Number < 1 {
			return fmt.Errorf("thoughts: thoughtNumber %d: expected at least 1", t.Number)
		}
	}
	return nil
}

func fullCommitID(s string) bool {
	if len(s) != 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
