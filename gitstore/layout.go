package gitstore

// The layout: every ref name, folder and file name, commit trailer and the
// thought file's encoding the store writes are spelled here, once.
// doc/architecture.md ("The Git layout") draws the same picture.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	// A drop-in decoder several times faster than encoding/json (already
	// in the build through the MCP SDK): decoding 10,000 thought files was
	// most of a session load.
	fastjson "github.com/segmentio/encoding/json"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// Refs.
const (
	refPrefix      = "refs/heads/sessions/"
	knowledgeRef   = "refs/heads/knowledge"
	notebookPrefix = "refs/heads/notebooks/"
)

// flusherRefRoots are the ref folders that only our flushers write (every
// move goes through the log), so a <ref>.lock found there at open was left
// by a killed flusher.
var flusherRefRoots = []string{"refs/heads/sessions", "refs/heads/knowledge", "refs/heads/notebooks"}

// deletedPrefix is where a deleted session's refs go:
// refs/thoughtbox/deleted/<id>/sessions/<id>/main (and branches), beside
// refs/thoughtbox/deleted/<id>/record, a commit whose parent is the main
// chain's tip and whose message records who deleted the session, when, and
// every ref it had at which commit. Outside refs/heads, the session leaves
// listings, search, loads and pushes; `git log thoughtbox/deleted/<id>/record`
// still reads the record and the whole session, and restore puts it back.
const deletedPrefix = "refs/thoughtbox/deleted/"

func mainRef(id string) string           { return refPrefix + id + "/main" }
func branchRef(id, branch string) string { return refPrefix + id + "/branches/" + branch }
func chainRef(id, branch string) string {
	if branch == "" {
		return mainRef(id)
	}
	return branchRef(id, branch)
}
func notebookRef(id string) string { return notebookPrefix + id }

// quarantinePrefix holds incoming chains a pull's checks refused:
// refs/thoughtbox/quarantine/<remote>/sessions/<id>/main (and branches).
const quarantinePrefix = "refs/thoughtbox/quarantine/"

// sessionOfRef names the session a ref belongs to ("" for knowledge, main).
func sessionOfRef(ref string) string {
	if rest, ok := strings.CutPrefix(ref, refPrefix); ok {
		id, _, _ := strings.Cut(rest, "/")
		return id
	}
	return ""
}

// shared reports whether a transfer (push, pull) moves ref.
func shared(ref string) bool {
	return strings.HasPrefix(ref, refPrefix) || strings.HasPrefix(ref, notebookPrefix) ||
		ref == knowledgeRef || ref == "refs/heads/main"
}

// refOrder sorts a session's main chain before its branches.
func refOrder(ref string) string {
	if strings.HasSuffix(ref, "/main") {
		return "0" + ref
	}
	return "1" + ref
}

// validSharedRef accepts refs/heads/knowledge, a notebook's
// refs/heads/notebooks/<id> and the refs of a session:
// refs/heads/sessions/<id>/main and refs/heads/sessions/<id>/branches/<b>.
func validSharedRef(name string) bool {
	if name == knowledgeRef || notebookOfRef(name) != "" {
		return true
	}
	rest, ok := strings.CutPrefix(name, refPrefix)
	if !ok {
		return false
	}
	id, chain, ok := strings.Cut(rest, "/")
	if !ok || validSessionID(id) != nil {
		return false
	}
	if chain == "main" {
		return true
	}
	b, ok := strings.CutPrefix(chain, "branches/")
	return ok && validBranchID(b) == nil
}

// The committer of every commit the store writes (addCommit).
const (
	committerName  = "Thoughtbox"
	committerEmail = "thoughtbox@localhost"
)

// Trailers of thought, critique and deletion commits.
const (
	trailerSession   = "Thoughtbox-Session"
	trailerThought   = "Thoughtbox-Thought"
	trailerBranch    = "Thoughtbox-Branch"
	trailerRevises   = "Thoughtbox-Revises"
	trailerCritique  = "Thoughtbox-Critique"
	trailerDeleted   = "Thoughtbox-Deleted"
	trailerDeletedBy = "Thoughtbox-Deleted-By"
)

// thoughtFile is thought n's file name in its chain's folder: %03d, so
// that the first 999 sort by name (the manifest, not the name, orders a
// chain).
func thoughtFile(n int) string {
	// Each thought names its file at least once; fmt costs more than the
	// padding.
	switch {
	case n < 0:
		return fmt.Sprintf("%03d.json", n)
	case n < 10:
		return "00" + strconv.Itoa(n) + ".json"
	case n < 100:
		return "0" + strconv.Itoa(n) + ".json"
	}
	return strconv.Itoa(n) + ".json"
}

// encodeThoughtFile is the one encoding of a thought file: indented JSON
// and a newline, as git diff shows it best.
func encodeThoughtFile(td ledger.ThoughtData) ([]byte, error) {
	if file, ok := appendThoughtFile(make([]byte, 0, len(td.Thought)+256), &td); ok {
		return append(file, '\n'), nil
	}
	file, err := json.MarshalIndent(td, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(file, '\n'), nil
}

// decodeThoughtFile is the one decoding of a thought file, for load,
// catch-up, critique and verify alike. It decodes as encoding/json does,
// but faster. The fast decoder refuses some things encoding/json takes (a
// timestamp "0000-01-01T0:00:00,0Z"), so on a refusal encoding/json
// decides: a file must not load in one place and be damaged in another
// (FuzzThoughtFile).
func decodeThoughtFile(data []byte, td *ledger.ThoughtData) error {
	if fastjson.Unmarshal(data, td) == nil {
		return nil
	}
	*td = ledger.ThoughtData{}
	return json.Unmarshal(data, td)
}
