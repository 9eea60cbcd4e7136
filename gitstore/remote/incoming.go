package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/frontmatter"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// What a pull brings in is checked before any ref of ours moves: a chain
// from a remote is someone else's writing, and once it is a live session
// ref, search, verify and add all trust it. A session whose incoming chain
// fails a check is kept under refs/thoughtbox/quarantine/<remote>/
// instead, where nothing reads it as a session, and the pull reports it.

// DefaultMaxThoughtBytes is the largest thought text (and critique text)
// a pull accepts when TransferOptions.MaxThoughtBytes is 0: the ledger's
// own default, so that what one ledger accepts from an agent another
// accepts from a pull.
const DefaultMaxThoughtBytes = ledger.DefaultMaxThoughtBytes

// Quarantined is an incoming chain a pull refused to make live.
type Quarantined struct {
	// Session is the session the chain's ref names ("" for the knowledge
	// zone).
	Session string `json:"session,omitempty"`
	// Notebook is the notebook the ref names ("" for another ref).
	Notebook string `json:"notebook,omitempty"`
	Ref      string `json:"ref"`
	// KeptAs is the ref that holds the remote's chain, in Repository.
	KeptAs string `json:"keptAs"`
	// Repository is the quarantine repository that holds KeptAs and the
	// chain's objects, outside the ledger (see gitstore.QuarantineDir);
	// "" on a memory store, where KeptAs is a ref of the store itself.
	Repository string `json:"repository,omitempty"`
	Tip        string `json:"tip"`
	// Problems say what is wrong, one finding each.
	Problems []string `json:"problems"`
}

func (o TransferOptions) maxThoughtBytes() int {
	if o.MaxThoughtBytes > 0 {
		return o.MaxThoughtBytes
	}
	return DefaultMaxThoughtBytes
}

// checkIncomingKnowledge checks the knowledge zone's incoming tip: only
// patterns/ and notes/ folders of .md entries, each valid UTF-8 with its
// front matter and content no longer than the knowledge service accepts
// (ledger.MaxKnowledgeContentBytes, which the thought limit does not
// change).
func (s *sharer) checkIncomingKnowledge(tip hash, maxBytes int) ([]string, error) {
	var problems []string
	cm, err := s.ReadCommit(tip)
	if err != nil {
		return []string{fmt.Sprintf("commit %s: %v", tip, err)}, nil
	}
	root, _, err := s.ReadTree(cm.Tree)
	if err != nil {
		return []string{fmt.Sprintf("the root tree of commit %s: %v", tip, err)}, nil
	}
	for _, e := range root.Entries {
		if !e.Dir || (e.Name != "patterns" && e.Name != "notes") {
			problems = append(problems, fmt.Sprintf("%s: expected only the folders patterns/ and notes/", e.Name))
			continue
		}
		dir, _, err := s.ReadTree(e.ID)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s/: %v", e.Name, err))
			continue
		}
		for _, f := range dir.Entries {
			path := e.Name + "/" + f.Name
			if f.Dir || !strings.HasSuffix(f.Name, ".md") {
				problems = append(problems, fmt.Sprintf("%s: expected a .md file", path))
				continue
			}
			t, data, err := s.ReadObject(f.ID)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s: %v", path, err))
			case t != typeBlob:
				problems = append(problems, fmt.Sprintf("%s: a %s, not a file", path, t))
			case int64(len(data)) > gitstore.MaxIncomingFileBytes(maxBytes):
				problems = append(problems, fmt.Sprintf("%s is %d bytes: more than %d, the most a file may hold", path, len(data), gitstore.MaxIncomingFileBytes(maxBytes)))
			case !utf8.Valid(data):
				problems = append(problems, fmt.Sprintf("%s is not UTF-8 text", path))
			default:
				_, content, ok := frontmatter.Split(data)
				if !ok {
					problems = append(problems, fmt.Sprintf("%s has no front matter (--- … ---)", path))
				} else if n := len(frontmatter.TrimContent(content)); n > ledger.MaxKnowledgeContentBytes {
					problems = append(problems, fmt.Sprintf("%s has %d bytes of content: more than the limit of %d", path, n, ledger.MaxKnowledgeContentBytes))
				}
			}
		}
	}
	return problems, nil
}

// checkIncomingNotebook checks a notebook's incoming tip as
// checkSessionLayout does a session's: the tree holds notebooks/<id>/ and
// nothing else (another notebook's folder would make it appear twice),
// with a notebook.json that is a JSON object, and every file is UTF-8 text
// within the size limit.
func (s *sharer) checkIncomingNotebook(id string, tip hash, maxBytes int) []string {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	cm, err := s.ReadCommit(tip)
	if err != nil {
		return []string{fmt.Sprintf("commit %s: %v", tip, err)}
	}
	root, _, err := s.ReadTree(cm.Tree)
	if err != nil {
		return []string{fmt.Sprintf("the root tree of commit %s: %v", tip, err)}
	}
	want := "notebooks/" + id + "/"
	for _, e := range root.Entries {
		if e.Name != "notebooks" || !e.Dir {
			fail("%s is outside %s: a notebook's ref holds only its own folder", e.Name, want)
		}
	}
	ne, ok := root.Get("notebooks")
	if !ok || !ne.Dir {
		return append(problems, fmt.Sprintf("commit %s has no folder %s", tip, want))
	}
	nbs, _, err := s.ReadTree(ne.ID)
	if err != nil {
		return append(problems, fmt.Sprintf("notebooks/: %v", err))
	}
	for _, e := range nbs.Entries {
		if e.Name != id || !e.Dir {
			fail("notebooks/%s is not the folder of notebook %s", e.Name, id)
		}
	}
	fe, ok := nbs.Get(id)
	if !ok || !fe.Dir {
		return append(problems, fmt.Sprintf("commit %s has no folder %s", tip, want))
	}
	folder, _, err := s.ReadTree(fe.ID)
	if err != nil {
		return append(problems, fmt.Sprintf("%s: %v", want, err))
	}
	var walk func(t *object.Tree, prefix string, depth int)
	walk = func(t *object.Tree, prefix string, depth int) {
		for _, e := range t.Entries {
			path := prefix + e.Name
			if err := gitstore.ValidNotebookPath(e.Name); err != nil {
				fail("%s: %v", path, err)
				continue
			}
			if e.Dir {
				if depth >= 8 {
					fail("%s/: folders nested more than 8 deep", path)
					continue
				}
				sub, _, err := s.ReadTree(e.ID)
				if err != nil {
					fail("%s/: %v", path, err)
					continue
				}
				walk(sub, path+"/", depth+1)
				continue
			}
			t, data, err := s.ReadObject(e.ID)
			switch {
			case err != nil:
				fail("%s: %v", path, err)
			case t != typeBlob:
				fail("%s: a %s, not a file", path, t)
			case len(data) > maxBytes:
				fail("%s is %d bytes: more than the limit of %d (MaxThoughtBytes)", path, len(data), maxBytes)
			case !utf8.Valid(data):
				fail("%s is not UTF-8 text", path)
			case path == want+"notebook.json" && !isJSONObject(data):
				fail("%s is not a JSON object", path)
			}
		}
	}
	walk(folder, want, 0)
	if e, ok := folder.Get("notebook.json"); !ok || e.Dir {
		fail("%snotebook.json is missing", want)
	}
	return problems
}

// checkNotebookHistory checks the commits a pull brings for a notebook,
// from tip down to the notebook's tip here (all of them for a notebook new
// to us): each must be a commit whose files are within the size limit, so
// that no oversized file enters the repository through an older commit
// that the tip no longer shows. Trees and blobs are looked at once.
func (s *sharer) checkNotebookHistory(ctx context.Context, tip, local hash, maxBytes int) ([]string, error) {
	var problems []string
	seen := map[hash]bool{local: true}
	var walkTree func(id hash, path string) error
	walkTree = func(id hash, path string) error {
		if seen[id] || len(problems) >= 20 {
			return nil
		}
		seen[id] = true
		t, _, err := s.ReadTree(id)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", path, err))
			return nil
		}
		for _, e := range t.Entries {
			if e.Dir {
				if err := walkTree(e.ID, path+e.Name+"/"); err != nil {
					return err
				}
				continue
			}
			if seen[e.ID] {
				continue
			}
			seen[e.ID] = true
			size, err := s.BlobSize(e.ID)
			switch {
			case err != nil:
				problems = append(problems, fmt.Sprintf("%s%s: %v", path, e.Name, err))
			case size > maxBytes:
				problems = append(problems, fmt.Sprintf("%s%s is %d bytes: more than the limit of %d (MaxThoughtBytes)", path, e.Name, size, maxBytes))
			}
		}
		return nil
	}
	queue := []hash{tip}
	for len(queue) > 0 && len(problems) < 20 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if seen[id] {
			continue
		}
		seen[id] = true
		c, err := s.ReadCommit(id)
		if err != nil {
			problems = append(problems, fmt.Sprintf("commit %s: %v", id, err))
			continue
		}
		if err := walkTree(c.Tree, ""); err != nil {
			return nil, err
		}
		queue = append(queue, c.Parents...)
	}
	return problems, nil
}

func isJSONObject(data []byte) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal(data, &v) == nil && v != nil
}

// quarantineIncoming checks every group (a session, or the knowledge zone)
// whose refs a pull would move, and takes each that fails out of groups:
// its remote tips are reported in res and returned by the names that keep
// them, under refs/thoughtbox/quarantine/<remote>/, for the pull to keep
// in the quarantine repository (see gitstore.Staging).
//
// The groups are checked side by side, one per core: each check only
// reads objects and refs, and a clone of thousands of sessions spent most
// of its time here. What they found is then acted on in the groups' order,
// so the result and the quarantine refs do not depend on which finished
// first.
func (s *sharer) quarantineIncoming(ctx context.Context, remote string, groups map[string][]string, remoteRefs map[string]hash, maxBytes int, res *PullResult) (map[string]hash, error) {
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	found := make([]groupCheck, len(names))
	err := checkEach(ctx, len(names), func(ctx context.Context, i int) error {
		var err error
		found[i], err = s.checkGroup(ctx, names[i], groups[names[i]], remoteRefs, maxBytes)
		return err
	})
	if err != nil {
		return nil, err
	}
	kept := map[string]hash{}
	for i, g := range names {
		moving, problems := found[i].moving, found[i].problems
		if len(problems) == 0 {
			continue
		}
		id := s.SessionOfRef(groups[g][0])
		delete(groups, g)
		refs := make([]string, 0, len(moving))
		for ref := range moving {
			refs = append(refs, ref)
		}
		sort.Slice(refs, func(i, j int) bool { return gitstore.RefOrder(refs[i]) < gitstore.RefOrder(refs[j]) })
		for _, ref := range refs {
			keep := gitstore.QuarantinePrefix + remote + "/" + strings.TrimPrefix(ref, s.SharedRefRoot())
			kept[keep] = moving[ref]
			res.Quarantined = append(res.Quarantined, Quarantined{Session: id, Notebook: s.NotebookOfRef(ref), Ref: ref, KeptAs: keep,
				Tip: moving[ref].String(), Problems: problems})
		}
	}
	return kept, nil
}

// groupCheck is what the check of one group found: the refs a pull would
// move (ref -> remote tip) and the problems of what they would move to.
type groupCheck struct {
	moving   map[string]hash
	problems []string
}

// checkGroup checks the refs of one group (a session, a notebook, the
// knowledge zone) that a pull would move: those the remote has ahead of
// ours or that we lack.
func (s *sharer) checkGroup(ctx context.Context, g string, refs []string, remoteRefs map[string]hash, maxBytes int) (groupCheck, error) {
	moving := map[string]hash{}
	for _, ref := range refs {
		l, err := s.ReadRef(ref)
		if err != nil {
			return groupCheck{}, err
		}
		r := remoteRefs[ref]
		if l == r {
			continue
		}
		if l != zeroHash {
			ahead, err := s.IsAncestor(r, l)
			if err != nil {
				return groupCheck{}, err
			}
			if ahead {
				continue
			}
		}
		moving[ref] = r
	}
	if len(moving) == 0 {
		return groupCheck{}, nil
	}
	var problems []string
	var err error
	switch first := refs[0]; {
	case s.SessionOfRef(first) != "":
		problems, err = s.CheckIncomingSession(ctx, s.SessionOfRef(first), moving, maxBytes)
	case first == gitstore.KnowledgeRef:
		problems, err = s.checkIncomingKnowledge(moving[gitstore.KnowledgeRef], maxBytes)
	case s.NotebookOfRef(first) != "":
		problems = s.checkIncomingNotebook(s.NotebookOfRef(first), moving[first], maxBytes)
		if len(problems) == 0 {
			local, rerr := s.ReadRef(first)
			if rerr != nil {
				return groupCheck{}, rerr
			}
			problems, err = s.checkNotebookHistory(ctx, moving[first], local, maxBytes)
		}
	}
	if err != nil {
		return groupCheck{}, fmt.Errorf("check %s: %w", g, err)
	}
	return groupCheck{moving: moving, problems: problems}, nil
}

// checkEach runs check(i) for i in [0, n) on as many goroutines as there
// are cores, and returns the error of the lowest i that failed. The i are
// handed out in order and, after a failure at k, no i above k is begun,
// while every i below k is still run, even one a goroutine was handed
// just before another reported k: the error is the one a check in order
// would have returned, whichever goroutine was first.
func checkEach(ctx context.Context, n int, check func(ctx context.Context, i int) error) error {
	errs := make([]error, n)
	var next atomic.Int64
	var lowest atomic.Int64 // the lowest i that failed so far, n while none has
	lowest.Store(int64(n))
	var wg sync.WaitGroup
	for w := min(runtime.GOMAXPROCS(0), n); w > 0; w-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= lowest.Load() {
					return
				}
				if errs[i] = check(ctx, int(i)); errs[i] != nil {
					for low := lowest.Load(); i < low && !lowest.CompareAndSwap(low, i); low = lowest.Load() {
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
