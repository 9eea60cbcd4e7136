package gitstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/fsck"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/refs"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// maxVerifyErrors bounds the messages of one session's check: a damaged
// pack could otherwise produce one per object.
const maxVerifyErrors = 50

// Verify implements ledger.Store. It is the thorough check behind
// `thoughtbox verify`, separate from LoadSession, which reads only what the
// session's current state needs and trusts the object store. Verify:
//
//   - checks that each of the session's refs (its main chain and every
//     refs/heads/sessions/<id>/branches/<b>) points at a commit that exists;
//   - walks every commit reachable from them (all parents) and every tree
//     and blob those commits name, and checks that each object exists,
//     inflates, has the type its referrer says, hashes to its id, and (for
//     commits and trees) parses; each damaged object is named with where it
//     was found: its path and the newest commit found holding it;
//   - checks every commit and tree as `git fsck --strict` does (see
//     gitstore/internal/fsck), so verify never says OK where fsck does not;
//   - checks that every commit belongs to the session (its
//     Thoughtbox-Session trailer) and that the commits named by
//     Thoughtbox-Revises exist;
//   - at each ref's tip, checks the manifest against the chain's thought
//     files: it parses and names the session, every file it lists is in the
//     tree (once), holds a thought whose thoughtNumber is the file's number
//     (and, on a branch, the branch's id), no thought file is left out, and
//     some commit of the chain recorded each listed thought.
//
// A session that has no ref at all is ledger.ErrSessionNotFound; damage is
// reported in the result, never as an error. opts.Full rebuilds and
// hashes every version of every packed object (see ledger.VerifyOptions).
func (s *Store) Verify(ctx context.Context, id string, opts ledger.VerifyOptions) (ledger.IntegrityValidationResult, error) {
	if err := validSessionID(id); err != nil {
		return ledger.IntegrityValidationResult{}, fmt.Errorf("%w: %v", ledger.ErrSessionNotFound, err)
	}
	refs, err := s.be.ListRefs(ctx, s.lay.sessions()+id+"/")
	if err != nil {
		return ledger.IntegrityValidationResult{}, err
	}
	// Only this session's ref files: verify of every session calls this
	// once per session.
	damaged, err := s.damagedRefs(s.lay.sessions() + id + "/")
	if err != nil {
		return ledger.IntegrityValidationResult{}, err
	}
	if len(refs) == 0 && len(damaged[id]) == 0 {
		return ledger.IntegrityValidationResult{}, fmt.Errorf("%w: %s", ledger.ErrSessionNotFound, id)
	}
	v := &verifier{ctx: ctx, s: s, id: id, status: map[hash]string{}, queued: map[hash]bool{},
		commits: map[hash]commitInfo{}, reported: map[string]bool{}, checkedFiles: map[string]bool{}, full: opts.Full}
	res := &v.res
	res.SessionExists = true

	// The chains in a stable order: main first, then branches by name.
	chains := make([]verifyChain, 0, len(refs))
	if tip, ok := refs[s.lay.mainRef(id)]; ok {
		chains = append(chains, verifyChain{ref: s.lay.mainRef(id), tip: tip})
	} else {
		res.SessionExists = false
		v.fail("ref %s is missing: the session has branch refs but no main chain", s.lay.mainRef(id))
	}
	var branches []string
	for ref := range refs {
		if b, ok := strings.CutPrefix(ref, s.lay.sessions()+id+"/branches/"); ok {
			branches = append(branches, b)
		}
	}
	sort.Strings(branches)
	for _, b := range branches {
		chains = append(chains, verifyChain{ref: s.lay.branchRef(id, b), branch: b, tip: refs[s.lay.branchRef(id, b)]})
	}

	for _, p := range damaged[id] {
		v.fail("%s", p)
	}
	// Reads look objects up in the pack indexes without hashing them
	// whole; verify checks each index's checksum (once per process).
	if be := s.disk; be != nil {
		if err := be.Packs().CheckIndexes(); err != nil {
			v.fail("%v", err)
		}
	}
	for i := range chains {
		v.checkTip(&chains[i])
	}
	if err := v.walk(chains); err != nil {
		return ledger.IntegrityValidationResult{}, err
	}
	for i := range chains {
		if chains[i].tipOK {
			v.checkChain(&chains[i])
		}
	}
	s.verifyParts(ctx, id, v.fail)
	if len(chains) == 0 || chains[0].branch != "" || !chains[0].tipOK {
		res.SessionExists = false
	}
	if v.dropped > 0 {
		res.Errors = append(res.Errors, fmt.Sprintf("… and %d more problems", v.dropped))
	}
	res.Valid = len(res.Errors) == 0 && len(res.MissingThoughtFiles) == 0 && len(res.MissingBranchFiles) == 0 &&
		res.SessionExists && res.ManifestExists && res.ManifestValid
	return *res, nil
}

// verifier is the state of one session's check.
type verifier struct {
	ctx context.Context
	s   *Store
	id  string
	res ledger.IntegrityValidationResult

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
	// full makes every object be rebuilt and hashed (verify --full),
	// instead of taking packed deltas through their base (verifydelta.go).
	full bool
	// packed, reps and repOrder are what viaPack keeps of the pack
	// entries checked: the type and size of each, and the layouts of the
	// trees checked last.
	packed   map[packKey]packedInfo
	reps     map[packKey]*treeRep
	repOrder []packKey
	// maxText, when above 0, bounds the text of each thought and critique
	// checked, in bytes: a pull's check of what a remote brings in. Verify
	// leaves it 0, since a ledger's own thoughts were measured when it
	// accepted them, perhaps under another limit.
	maxText int
	// fileMax, when above 0, bounds every blob the walk reaches (see
	// MaxIncomingFileBytes). The walk learns each blob's size as it checks
	// it, so measuring there costs nothing, where reading every blob again
	// afterwards cost a pull of a large ledger a third of its checks.
	fileMax int64
	// tips are the chains' tips, and tipData the objects of their trees
	// as the walk read and checked them (up to maxTipData bytes):
	// checkChain reads those objects again, and a pull of thousands of
	// sessions spent a tenth of its checks inflating them a second time.
	tips        map[hash]bool
	tipData     map[hash]tipObject
	tipDataSize int
	// trustIndexed lets the walk take a blob's type and size from the
	// indexer that just took the pack holding it (verifyindexed.go): a
	// pull's check, never verify's.
	trustIndexed bool
}

// tipObject is an object of a tip's tree as the walk checked it.
type tipObject struct {
	typ  objType
	data []byte
}

// maxTipData bounds what a check keeps of its tips' objects.
const maxTipData = 64 << 20

// keep holds on to an object of a tip's tree the walk checked, for
// checkChain.
func (v *verifier) keep(it walkItem, data []byte) {
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
func (v *verifier) sized(id hash, size int) {
	if v.fileMax > 0 && int64(size) > v.fileMax {
		v.fail("file %s is %d bytes: more than %d, the most a file may hold under a thought limit of %d bytes (THOUGHTBOX_MAX_THOUGHT_BYTES)", id, size, v.fileMax, v.maxText)
	}
}

// verifyChain is one ref of the session.
type verifyChain struct {
	ref    string
	branch string // "" for the main chain
	tip    hash
	tipOK  bool // the tip is a whole commit
}

func (c *verifyChain) label() string {
	if c.branch == "" {
		return "main chain"
	}
	return "branch " + c.branch
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

func (v *verifier) fail(format string, a ...any) {
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
func (v *verifier) read(id hash, want objType, what func() string) ([]byte, bool) {
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
	v.fail("%s object %s: %s; %s", problemKind(problem), id, what(), problem)
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
func (v *verifier) object(id hash, want objType) (data []byte, problem string) {
	t, data, err := v.s.be.ReadObject(v.ctx, id)
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

// checkTip checks that a ref points at a whole commit.
func (v *verifier) checkTip(c *verifyChain) {
	_, problem := v.object(c.tip, typeCommit)
	switch {
	case problem == problemMissing:
		v.status[c.tip] = problem
		v.fail("ref %s points at %s, which does not exist", c.ref, c.tip)
	case problem != "":
		v.status[c.tip] = problem
		v.fail("corrupt object %s: the commit ref %s points at; %s", c.tip, c.ref, problem)
	default:
		c.tipOK = true
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

// walk reads every object reachable from the chains' tips.
func (v *verifier) walk(chains []verifyChain) error {
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
		if chains[i].tipOK {
			if v.tips == nil {
				v.tips = map[hash]bool{}
			}
			v.tips[chains[i].tip] = true
		}
	}
	for i := len(chains) - 1; i >= 0; i-- { // the main chain on top
		c := chains[i]
		if c.tipOK && !v.queued[c.tip] {
			v.queued[c.tip] = true
			stack = append(stack, walkItem{id: c.tip, typ: typeCommit, ref: c.ref})
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
		if readObjectHook != nil {
			readObjectHook(it.id, it.typ)
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
func (v *verifier) walkCommit(it walkItem, data []byte, stack *[]walkItem) {
	if err := fsck.Commit(data); err != nil {
		v.fail("commit %s (%s) fails git fsck --strict: %v", it.id, it.what(), err)
	}
	c, err := object.ParseCommit(data)
	if err != nil {
		v.fail("malformed commit %s (%s): %v", it.id, it.what(), err)
		return
	}
	info := commitInfo{}
	if len(c.Parents) > 0 {
		info.parent = c.Parents[0]
	}
	tr := trailers(c.Message)
	info.session, info.branch = tr[trailerSession], tr[trailerBranch]
	info.thought, _ = strconv.Atoi(tr[trailerThought])
	v.commits[it.id] = info
	// Report a commit of another session once, where the chain
	// leaves the session, not for each of its ancestors.
	child, fromChild := v.commits[it.commit]
	if info.session != v.id && (!fromChild || child.session == v.id) {
		subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
		if info.session == "" {
			v.fail("commit %s (%s) has no Thoughtbox-Session trailer: it is not a commit of this session (written or rewritten outside Thoughtbox, e.g. by plain Git; its subject: %q)", it.id, it.what(), subject)
		} else {
			v.fail("commit %s (%s) belongs to session %s", it.id, it.what(), info.session)
		}
	}
	if r := tr[trailerRevises]; r != "" {
		sha, _, _ := strings.Cut(r, " ")
		if to, err := object.ParseHash(sha); err == nil {
			v.revises = append(v.revises, revisesLink{from: it.id, to: to})
		}
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
func (v *verifier) walkTree(it walkItem, data []byte, key packKey, how int, push func(parent walkItem, name []byte, dir bool, id hash)) {
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
		v.fail("tree %s (%s) fails git fsck --strict: %v", it.id, it.what(), fsckErr)
	}
	err := scanTree(region, func(name []byte, dir bool, id hash) { push(it, name, dir, id) })
	if err != nil {
		v.fail("malformed tree %s (%s): %v", it.id, it.what(), err)
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
func (v *verifier) checkRevises() {
	for _, r := range v.revises {
		if _, ok := v.commits[r.to]; ok {
			continue
		}
		if _, problem := v.object(r.to, typeCommit); problem != "" {
			v.fail("commit %s says Thoughtbox-Revises %s, and that commit is %s: %s",
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

// DamagedRefs finds session refs that cannot be read: loose ref files under
// refs/heads/sessions/ that do not hold an object id (a truncated write by
// another program, a hand edit). Listing skips such refs — a session whose
// main ref is damaged disappears from the list — so verify asks here. The
// result maps session ids to one problem per damaged ref.
func (s *Store) DamagedRefs() (map[string][]string, error) { return s.damagedRefs(s.lay.sessions()) }

// damagedRefs is DamagedRefs for the refs under prefix only.
func (s *Store) damagedRefs(prefix string) (map[string][]string, error) {
	be := s.disk
	if be == nil {
		return nil, nil
	}
	bad, err := refs.BadLoose(be.GitDir(), prefix)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for ref, content := range bad {
		id := s.lay.sessionOfRef(ref)
		if id == "" {
			continue
		}
		if len(content) > 60 {
			content = content[:60] + "…"
		}
		out[id] = append(out[id], fmt.Sprintf("ref %s does not hold an object id (it holds %q)", ref, content))
	}
	for _, problems := range out {
		sort.Strings(problems)
	}
	return out, nil
}
