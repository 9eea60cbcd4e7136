// Package verify is the thorough check of a session's chains: the one
// behind `thoughtbox verify`, and a pull's check of what a remote brings
// in. It reads every object the chains reach, checks that each exists,
// inflates, has the type its referrer says and hashes to its id, checks
// every commit and tree as `git fsck --strict` does (gitstore/internal/fsck),
// checks that each commit belongs to the session, and holds each tip's
// manifest and thought files to each other and to the chain's commits.
// Packed versions are checked against their already checked base rather
// than rebuilt (delta.go), so a check costs time linear in the session.
//
// The package knows a session's folder as the seeds lay it out
// (sessions/[<partition>/]<id>/ with manifest.json, the thought files and
// branches/<branch>/) but no ref name and no codec: the store hands it the
// chains to check (a ref's name and tip), reads objects for it (Source),
// and says how a commit's trailers, a manifest and a thought file read
// (Layout). A store's Verify and its pull's check use it in this order:
//
//	c := verify.New(ctx, src, layout, session, verify.Options{})
//	for i := range chains {
//		c.CheckTip(&chains[i])
//	}
//	err := c.Walk(chains)
//	for i := range chains {
//		if chains[i].TipOK {
//			c.CheckChain(&chains[i])
//		}
//	}
//	res := c.Finish()
//
// A Check is used by one goroutine and has no locks.
package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/fsck"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
)

// Short names for what every file of the package speaks in.
type (
	hash    = object.Hash
	objType = object.Type
)

const (
	typeCommit = object.TypeCommit
	typeTree   = object.TypeTree
	typeBlob   = object.TypeBlob
)

var (
	zeroHash    = object.ZeroHash
	errNotFound = object.ErrNotFound
)

// Source is what a check reads of the store.
type Source interface {
	// ReadObject returns an object's type and content, and an error
	// matching object.ErrNotFound when the object does not exist.
	ReadObject(ctx context.Context, id object.Hash) (object.Type, []byte, error)
	// ReadRaw returns the pack entry that holds an object, and
	// object.ErrNotFound when no pack holds it (always, in memory).
	ReadRaw(id object.Hash) (pack.RawEntry, error)
	// Indexed returns the type and size our own indexer found of an
	// object of a pack this process took (a pull's staged pack included);
	// ok is false when it has nothing to say.
	Indexed(id object.Hash) (t object.Type, size int, ok bool)
}

// Layout is how the store's layout reads what the checks parse: the
// codecs live with the layout, which spells them once.
type Layout struct {
	// Marks reads a commit message's trailers.
	Marks func(message string) Marks
	// Manifest parses a session's manifest.json.
	Manifest func(data []byte) (Manifest, error)
	// Thought decodes a thought file.
	Thought func(data []byte) (Thought, error)
	// ThoughtFile says whether name is a thought file's name, and the
	// number it gives the thought.
	ThoughtFile func(name string) (n int, ok bool)
}

// Marks are what a commit's trailers say.
type Marks struct {
	Session string
	Branch  string
	Thought int // 0 when the commit names no thought
	// Revises is the commit a revision names, when Revising.
	Revises  object.Hash
	Revising bool
}

// Manifest is what the checks read of a session's manifest.
type Manifest struct {
	ID           string
	ThoughtFiles []string
	BranchFiles  map[string][]string
}

// Thought is what the checks read of a thought file.
type Thought struct {
	Number   int
	Branch   string
	Text     string
	Critique string // "" when the thought has none
}

// Options shape a check.
type Options struct {
	// Full rebuilds and hashes every object, instead of taking packed
	// deltas through their base (delta.go): verify --full.
	Full bool
	// MaxText, when above 0, bounds the text of each thought and critique
	// checked, in bytes: a pull's check of what a remote brings in. Verify
	// leaves it 0, since a ledger's own thoughts were measured when it
	// accepted them, perhaps under another limit.
	MaxText int
	// FileMax, when above 0, bounds every blob the walk reaches. The walk
	// learns each blob's size as it checks it, so measuring there costs
	// nothing, where reading every blob again afterwards cost a pull of a
	// large ledger a third of its checks.
	FileMax int64
	// TrustIndexed lets the walk take a blob's type and size from the
	// indexer that just took the pack holding it (indexed.go): a pull's
	// check, never verify's.
	TrustIndexed bool
}

// Chain is one ref of the session to check.
type Chain struct {
	Ref    string
	Branch string // "" for the main chain
	Tip    object.Hash
	// TipOK says the tip is a whole commit; CheckTip sets it.
	TipOK bool
}

// Label names the chain in a problem: "main chain" or "branch <b>".
func (c *Chain) Label() string {
	if c.Branch == "" {
		return "main chain"
	}
	return "branch " + c.Branch
}

// Result is what a check found.
type Result struct {
	// Errors are the problems, each once, at most maxVerifyErrors of them
	// and then a line saying how many more there were.
	Errors []string
	// MissingThoughtFiles are the main chain's files its manifest lists
	// and its tree lacks; MissingBranchFiles those of each branch.
	MissingThoughtFiles []string
	MissingBranchFiles  map[string][]string
	// ManifestExists and ManifestValid describe the main chain's manifest.
	ManifestExists bool
	ManifestValid  bool
}

// maxVerifyErrors bounds the messages of one session's check: a damaged
// pack could otherwise produce one per object.
const maxVerifyErrors = 50

// New starts the check of session's chains.
func New(ctx context.Context, src Source, layout Layout, session string, opts Options) *Check {
	return &Check{ctx: ctx, src: src, lay: layout, id: session, status: map[hash]string{}, queued: map[hash]bool{},
		commits: map[hash]commitInfo{}, reported: map[string]bool{}, checkedFiles: map[string]bool{},
		full: opts.Full, maxText: opts.MaxText, fileMax: opts.FileMax, trustIndexed: opts.TrustIndexed}
}

// Known marks a commit the store already holds, checked before: the walk
// stops there, so that a pull's check costs what the pull brings.
func (v *Check) Known(id object.Hash) { v.queued[id] = true }

// Missing returns the thought files found missing so far.
func (v *Check) Missing() (thoughts []string, branches map[string][]string) {
	return v.res.MissingThoughtFiles, v.res.MissingBranchFiles
}

// Finish ends the check: the problems beyond maxVerifyErrors are counted
// in a last line.
func (v *Check) Finish() Result {
	if v.dropped > 0 {
		v.res.Errors = append(v.res.Errors, fmt.Sprintf("… and %d more problems", v.dropped))
	}
	return v.res
}

// Check is the state of one session's check.
type Check struct {
	ctx context.Context
	src Source
	lay Layout
	id  string
	res Result

	// status is what reading an object found: "" when it is whole, else the
	// problem, already reported.
	status map[hash]string
	// queued marks the objects the walk has already scheduled.
	queued map[hash]bool
	// commits holds what the chain checks need of each commit walked.
	commits map[hash]commitInfo
	// revises lists the commits named by Thoughtbox-Revises trailers.
	revises []revisesLink
	// reported and dropped keep the messages unique and bounded.
	reported map[string]bool
	dropped  int
	// checkedFiles marks the thought files (blob and name) already checked,
	// since a branch's tree shares the main chain's files up to its fork.
	checkedFiles map[string]bool
	// trees holds, by path, the last tree checked there (see checkedTree).
	trees map[string]*checkedTree
	// full, maxText, fileMax and trustIndexed are the Options.
	full         bool
	maxText      int
	fileMax      int64
	trustIndexed bool
	// packed, reps and repOrder are what viaPack keeps of the pack
	// entries checked: the type and size of each, and the layouts of the
	// trees checked last.
	packed   map[packKey]packedInfo
	reps     map[packKey]*treeRep
	repOrder []packKey
	// tips are the chains' tips, and tipData the objects of their trees
	// as the walk read and checked them (up to maxTipData bytes):
	// CheckChain reads those objects again, and a pull of thousands of
	// sessions spent a tenth of its checks inflating them a second time.
	tips        map[hash]bool
	tipData     map[hash]tipObject
	tipDataSize int
}

// tipObject is an object of a tip's tree as the walk checked it.
type tipObject struct {
	typ  objType
	data []byte
}

// maxTipData bounds what a check keeps of its tips' objects.
const maxTipData = 64 << 20

// keep holds on to an object of a tip's tree the walk checked, for
// CheckChain.
func (v *Check) keep(it walkItem, data []byte) {
	if !v.tips[it.commit] && !(it.typ == typeCommit && it.commit == zeroHash) {
		return
	}
	if v.tipDataSize+len(data) > maxTipData {
		return
	}
	if v.tipData == nil {
		v.tipData = map[hash]tipObject{}
	}
	v.tipData[it.id] = tipObject{it.typ, data}
	v.tipDataSize += len(data)
}

// sized measures a blob the walk checked against fileMax.
func (v *Check) sized(id hash, size int) {
	if v.fileMax > 0 && int64(size) > v.fileMax {
		v.Fail("file %s is %d bytes: more than %d, the most a file may hold under a thought limit of %d bytes (THOUGHTBOX_MAX_THOUGHT_BYTES)", id, size, v.fileMax, v.maxText)
	}
}

type commitInfo struct {
	parent  hash // first parent; zeroHash for a root commit
	session string
	branch  string
	thought int // 0 when the commit names no thought
}

type revisesLink struct {
	from, to hash
}

// Fail adds a problem to the check's result, once however often it is
// found.
func (v *Check) Fail(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if v.reported[msg] {
		return
	}
	v.reported[msg] = true
	if len(v.res.Errors) >= maxVerifyErrors {
		v.dropped++
		return
	}
	v.res.Errors = append(v.res.Errors, msg)
}

// read returns an object's content once it has checked that the object
// exists, inflates, is of type want and hashes to its id. Otherwise it
// reports the problem, once per object, saying what the object is (what is
// called only then), and returns false.
func (v *Check) read(id hash, want objType, what func() string) ([]byte, bool) {
	if p, seen := v.status[id]; seen && p != "" {
		return nil, false
	}
	if o, ok := v.tipData[id]; ok && o.typ == want {
		// Checked whole by the walk. An id a tree names as a file and
		// another as a folder is read the thorough way, which reports it.
		return o.data, true
	}
	data, problem := v.object(id, want)
	if problem == "" {
		v.status[id] = ""
		return data, true
	}
	v.status[id] = problem
	v.Fail("%s object %s: %s; %s", problemKind(problem), id, what(), problem)
	return nil, false
}

// The problems object reports; missing and corrupt are how they are named.
const (
	problemMissing = "it does not exist"
)

func problemKind(problem string) string {
	if problem == problemMissing {
		return "missing"
	}
	return "corrupt"
}

// object reads and checks one object; problem is "" when it is whole.
func (v *Check) object(id hash, want objType) (data []byte, problem string) {
	t, data, err := v.src.ReadObject(v.ctx, id)
	switch {
	case errors.Is(err, errNotFound):
		return nil, problemMissing
	case err != nil:
		return nil, fmt.Sprintf("it does not inflate or parse: %v", err)
	case t != want:
		return nil, fmt.Sprintf("it is a %s, not a %s", t, want)
	}
	if got := object.HashObject(t, data); got != id {
		return nil, fmt.Sprintf("its content hashes to %s", got)
	}
	return data, ""
}

// CheckTip checks that a chain's ref points at a whole commit, and sets
// c.TipOK when it does.
func (v *Check) CheckTip(c *Chain) {
	_, problem := v.object(c.Tip, typeCommit)
	switch {
	case problem == problemMissing:
		v.status[c.Tip] = problem
		v.Fail("ref %s points at %s, which does not exist", c.Ref, c.Tip)
	case problem != "":
		v.status[c.Tip] = problem
		v.Fail("corrupt object %s: the commit ref %s points at; %s", c.Tip, c.Ref, problem)
	default:
		c.TipOK = true
	}
}

// walkItem is an object the walk has still to read.
type walkItem struct {
	id  hash
	typ objType
	// path is the object's path in the commit's tree ("" for the root tree).
	path   string
	commit hash // the commit whose tree holds it, or the child of a commit
	ref    string
}

func (it walkItem) what() string {
	switch {
	case it.typ == typeCommit && it.commit == zeroHash:
		return "the tip of " + it.ref
	case it.typ == typeCommit:
		return fmt.Sprintf("the parent of commit %s", it.commit)
	case it.path == "":
		return fmt.Sprintf("the root tree of commit %s", it.commit)
	}
	return fmt.Sprintf("the %s %s in commit %s", it.typ, it.path, it.commit)
}

// Walk reads and checks every object reachable from the chains' tips
// (those CheckTip found whole) but the commits Known and what they reach.
// It returns only the context's error; problems go to the result.
func (v *Check) Walk(chains []Chain) error {
	var stack []walkItem
	push := func(parent walkItem, name []byte, dir bool, id hash) {
		if v.queued[id] {
			return
		}
		v.queued[id] = true
		child := walkItem{id: id, typ: typeBlob, path: string(name), commit: parent.commit}
		if parent.path != "" {
			child.path = parent.path + "/" + child.path
		}
		if dir {
			child.typ = typeTree
		}
		stack = append(stack, child)
	}
	for i := range chains {
		if chains[i].TipOK {
			if v.tips == nil {
				v.tips = map[hash]bool{}
			}
			v.tips[chains[i].Tip] = true
		}
	}
	for i := len(chains) - 1; i >= 0; i-- { // the main chain on top
		c := chains[i]
		if c.TipOK && !v.queued[c.Tip] {
			v.queued[c.Tip] = true
			stack = append(stack, walkItem{id: c.Tip, typ: typeCommit, ref: c.Ref})
		}
	}
	for n := 0; len(stack) > 0; n++ {
		if n%1024 == 0 {
			if err := v.ctx.Err(); err != nil {
				return err
			}
		}
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if v.indexedBlob(it) {
			continue
		}
		data, key, how := v.viaPack(it, push)
		if how == packDone {
			continue
		}
		ok := how == packWhole
		if !ok {
			data, ok = v.read(it.id, it.typ, it.what)
		}
		if !ok {
			continue
		}
		if how == packBase && it.typ != typeTree {
			v.notePacked(key, it.typ, len(data), nil)
		}
		if it.typ == typeBlob {
			v.sized(it.id, len(data))
		}
		v.keep(it, data)
		switch it.typ {
		case typeCommit:
			v.walkCommit(it, data, &stack)
		case typeTree:
			v.walkTree(it, data, key, how, push)
		}
	}
	v.checkRevises()
	return nil
}

// walkCommit checks a commit the walk read, records what verification
// needs of it, and queues its parents and its tree on stack.
func (v *Check) walkCommit(it walkItem, data []byte, stack *[]walkItem) {
	if err := fsck.Commit(data); err != nil {
		v.Fail("commit %s (%s) fails git fsck --strict: %v", it.id, it.what(), err)
	}
	c, err := object.ParseCommit(data)
	if err != nil {
		v.Fail("malformed commit %s (%s): %v", it.id, it.what(), err)
		return
	}
	info := commitInfo{}
	if len(c.Parents) > 0 {
		info.parent = c.Parents[0]
	}
	marks := v.lay.Marks(c.Message)
	info.session, info.branch, info.thought = marks.Session, marks.Branch, marks.Thought
	v.commits[it.id] = info
	// Report a commit of another session once, where the chain
	// leaves the session, not for each of its ancestors.
	child, fromChild := v.commits[it.commit]
	if info.session != v.id && (!fromChild || child.session == v.id) {
		subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
		if info.session == "" {
			v.Fail("commit %s (%s) has no Thoughtbox-Session trailer: it is not a commit of this session (written or rewritten outside Thoughtbox, e.g. by plain Git; its subject: %q)", it.id, it.what(), subject)
		} else {
			v.Fail("commit %s (%s) belongs to session %s", it.id, it.what(), info.session)
		}
	}
	if marks.Revising {
		v.revises = append(v.revises, revisesLink{from: it.id, to: marks.Revises})
	}
	// Parents are pushed first, so that a commit's tree is read
	// before its parent's: from the newest version of each object
	// to the oldest, the order in which a pack's delta chains
	// (newest whole) resolve from the base cache.
	for i := len(c.Parents) - 1; i >= 0; i-- {
		if p := c.Parents[i]; !v.queued[p] {
			v.queued[p] = true
			*stack = append(*stack, walkItem{id: p, typ: typeCommit, commit: it.id})
		}
	}
	if !v.queued[c.Tree] {
		v.queued[c.Tree] = true
		*stack = append(*stack, walkItem{id: c.Tree, typ: typeTree, commit: it.id})
	}
}

// walkTree checks a tree the walk read and queues its entries with push.
func (v *Check) walkTree(it walkItem, data []byte, key packKey, how int, push func(parent walkItem, name []byte, dir bool, id hash)) {
	// Against the last version checked at this path, only the
	// entries that changed (and their neighbours) need checking.
	region, bounds := data, []int(nil)
	ref := v.trees[it.path]
	if ref != nil {
		if from, to, b, ok := ref.changedRegion(data); ok {
			region, bounds = data[from:to], b
		}
	}
	fsckErr := fsck.Tree(region)
	if fsckErr != nil {
		v.Fail("tree %s (%s) fails git fsck --strict: %v", it.id, it.what(), fsckErr)
	}
	err := scanTree(region, func(name []byte, dir bool, id hash) { push(it, name, dir, id) })
	if err != nil {
		v.Fail("malformed tree %s (%s): %v", it.id, it.what(), err)
	}
	if how != packNot {
		var rep *treeRep
		if fsckErr == nil && err == nil {
			rep = wholeTreeRep(data)
		}
		v.notePacked(key, typeTree, len(data), rep)
	}
	// Only a tree found whole serves as the next reference.
	if fsckErr == nil && err == nil {
		if bounds == nil {
			bounds = treeBounds(data)
		}
		if bounds != nil || len(data) == 0 {
			if v.trees == nil {
				v.trees = map[string]*checkedTree{}
			}
			v.trees[it.path] = &checkedTree{data: data, bounds: bounds}
		}
	}
}

// checkRevises reports each Thoughtbox-Revises trailer the walk found
// whose commit is not among the walked ones and cannot be read whole.
func (v *Check) checkRevises() {
	for _, r := range v.revises {
		if _, ok := v.commits[r.to]; ok {
			continue
		}
		if _, problem := v.object(r.to, typeCommit); problem != "" {
			v.Fail("commit %s says Thoughtbox-Revises %s, and that commit is %s: %s",
				r.from, r.to, problemKind(problem), problem)
		}
	}
}

// scanTree calls fn for each entry of an encoded tree, without building a
// tree: the walk reads every version of a session folder, and most of
// their entries were seen in the previous version. Submodule entries
// (mode 160000) name commits of other repositories and are skipped.
func scanTree(data []byte, fn func(name []byte, dir bool, id hash)) error {
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp < 0 {
			return fmt.Errorf("tree entry without mode")
		}
		mode := string(data[:sp])
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul < 0 || len(data) < nul+1+20 {
			return fmt.Errorf("truncated tree entry")
		}
		name := data[:nul]
		var id hash
		copy(id[:], data[nul+1:nul+21])
		data = data[nul+21:]
		switch mode {
		case "40000", "040000":
			fn(name, true, id)
		case "100644", "100755", "120000":
			fn(name, false, id)
		case "160000":
		default:
			return fmt.Errorf("entry %q has mode %s", name, mode)
		}
	}
	return nil
}
