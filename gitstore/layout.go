package gitstore

// The layout: every ref name, folder and file name, commit trailer and the
// thought file's encoding the store writes are spelled here, once.
// doc/architecture.md ("The Git layout") draws the same picture.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	// A drop-in decoder several times faster than encoding/json (already
	// in the build through the MCP SDK): decoding 10,000 thought files was
	// most of a session load.
	fastjson "github.com/segmentio/encoding/json"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// Layout says where a store keeps its refs. One engine serves both:
// everything else (trees, files, trailers, the log) is the same.
type Layout int

const (
	// Standalone is a ledger with a bare repository of its own under the
	// data directory: sessions, knowledge and notebooks are real branches
	// (refs/heads/...), and main holds a README.
	Standalone Layout = iota
	// InCode keeps the ledger in a code repository's own object store:
	// the same refs under refs/thoughtbox/v1/, which no Git tool lists as
	// a branch and no default clone or fetch refspec matches, and no
	// README on main (main is the user's). The repository is shared with
	// git and its users, so the engine never removes a lock or a
	// temporary file it cannot prove is its own (repo.FSOptions.SharedWithGit).
	InCode
)

// String names the layout as status and info show it.
func (l Layout) String() string {
	if l == InCode {
		return "code repository"
	}
	return "standalone"
}

// refRoot is the folder every shared ref of the layout lives under.
func (l Layout) refRoot() string {
	if l == InCode {
		return "refs/thoughtbox/v1/"
	}
	return "refs/heads/"
}

// The refs of a layout, under its root:
//
//	sessions/<id>/main
//	sessions/<id>/branches/<branchId>
//	sessions/<id>/links               (InCode only: see links.go)
//	knowledge
//	notebooks/<id>
//
// No name is both a ref and a folder of refs: a session's folder holds the
// leaf main and the folder branches/, and session and notebook ids are
// folder names only.
//
// Which kind of entity a ref under the root belongs to is the kinds
// table's to say (kinds.go), where these areas are spelled.
func (l Layout) sessions() string  { return l.refRoot() + sessionsArea }
func (l Layout) knowledge() string { return l.refRoot() + knowledgeArea }
func (l Layout) notebooks() string { return l.refRoot() + notebooksArea }

// readme says whether the layout starts refs/heads/main with a README.
func (l Layout) readme() bool { return l == Standalone }

// flusherRefRoots are the ref folders that only our flushers write (every
// move goes through the log), so a <ref>.lock found there at open was left
// by a killed flusher.
func (l Layout) flusherRefRoots() []string {
	var roots []string
	for _, k := range kinds {
		r := l.refRoot() + strings.TrimSuffix(k.area, "/")
		if !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	return roots
}

// deletedPrefix is where a deleted session's refs go:
// refs/thoughtbox/deleted/<id>/sessions/<id>/main (and branches), beside
// refs/thoughtbox/deleted/<id>/record, a commit whose parent is the main
// chain's tip and whose message records who deleted the session, when, and
// every ref it had at which commit. Outside the shared refs, the session
// leaves listings, search, loads and pushes; `git log
// thoughtbox/deleted/<id>/record` still reads the record and the whole
// session, and restore puts it back. The same folder serves both layouts:
// it is local, and a name under it says which shared ref it was by its
// path below the layout's root.
const deletedPrefix = "refs/thoughtbox/deleted/"

func (l Layout) mainRef(id string) string           { return l.sessions() + id + "/main" }
func (l Layout) branchRef(id, branch string) string { return l.sessions() + id + "/branches/" + branch }
func (l Layout) chainRef(id, branch string) string {
	if branch == "" {
		return l.mainRef(id)
	}
	return l.branchRef(id, branch)
}
func (l Layout) notebookRef(id string) string { return l.notebooks() + id }

// deletedNotebookRef keeps a deleted notebook's history: a record commit
// whose first parent is the notebook's last tip and whose second, if any,
// is the record of an earlier notebook of the same id deleted before. It
// sits under deletedPrefix in a folder no session id takes (sessions are
// UUIDs), local and the same for both layouts like a session's.
func (l Layout) deletedNotebookRef(id string) string {
	return deletedPrefix + "notebooks/" + id + "/record"
}

// quarantinePrefix holds incoming chains a pull's checks refused:
// refs/thoughtbox/quarantine/<remote>/sessions/<id>/main (and branches).
const quarantinePrefix = "refs/thoughtbox/quarantine/"

// sessionOfRef names the session a ref belongs to: any ref in a
// session's folder ("" for knowledge, main, a notebook).
func (l Layout) sessionOfRef(ref string) string {
	if k, id, _ := l.kindOf(ref); k != nil && k.ofSession {
		return id
	}
	return ""
}

// notebookOfRef names the notebook a ref belongs to ("" for any other
// ref, or an invalid notebook id).
func (l Layout) notebookOfRef(ref string) string {
	if k, id, valid := l.kindOf(ref); k == notebookKind && valid {
		return id
	}
	return ""
}

// shared reports whether a transfer (push, pull) moves ref: whatever lies
// in a kind's area, and main where the layout writes it.
func (l Layout) shared(ref string) bool {
	return l.inAnyArea(ref) || (l.readme() && ref == "refs/heads/main")
}

// refOrder sorts a session's main chain before its branches.
func refOrder(ref string) string {
	if strings.HasSuffix(ref, "/main") {
		return "0" + ref
	}
	return "1" + ref
}

// validSharedRef accepts a ref of some kind with a name this engine
// writes itself: the knowledge ref, a notebook's ref and the refs of a
// session (<root>sessions/<id>/main, <root>sessions/<id>/branches/<b>
// and, inside a code repository, <root>sessions/<id>/links).
func (l Layout) validSharedRef(name string) bool {
	k, _, valid := l.kindOf(name)
	return k != nil && valid
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
