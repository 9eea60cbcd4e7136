package ledger

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// ThoughtNode is one thought in the session graph (seed 002). Node ids are
// "{sessionId}:{n}" on the main chain and "{sessionId}:{branchId}:{n}" on a
// branch; the other links hold node ids, "" meaning none.
type ThoughtNode struct {
	ID   string
	Data ThoughtData
	// Prev is the thought before this one on its chain, in creation order.
	// The first thought of a branch has its fork point as Prev.
	Prev string
	// Next lists the thoughts that follow, in creation order. A fork point
	// lists its main-chain continuation and the first thought of every
	// branch forked from it.
	Next []string
	// RevisesNode is the thought this one revises.
	RevisesNode string
	// BranchOrigin is the fork point of the branch this thought is on; every
	// thought of a branch carries it, as every one names branchFromThought.
	BranchOrigin string
	BranchID     BranchID
	// Cipher is set when the thought is written in cipher notation (see
	// ParseCipher): its step type and its references, resolved to nodes.
	// It is shared between snapshots and must not be modified.
	Cipher *CipherInfo

	commit CommitID
}

// Commit is the stored version that recorded the thought.
func (n ThoughtNode) Commit() CommitID { return n.commit }

// MarshalJSON writes the seed 002 shape: absent links are null, and next is
// [] rather than null.
func (n ThoughtNode) MarshalJSON() ([]byte, error) {
	next := n.Next
	if next == nil {
		next = []string{}
	}
	return json.Marshal(struct {
		ID           string      `json:"id"`
		Data         ThoughtData `json:"data"`
		Prev         *string     `json:"prev"`
		Next         []string    `json:"next"`
		RevisesNode  *string     `json:"revisesNode"`
		BranchOrigin *string     `json:"branchOrigin"`
		BranchID     *string     `json:"branchId"`
		Cipher       *CipherInfo `json:"cipher,omitempty"`
	}{n.ID, n.Data, nullable(n.Prev), next, nullable(n.RevisesNode), nullable(n.BranchOrigin), nullable(string(n.BranchID)), n.Cipher})
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// NodeID returns the id of thought n on branch b ("" for the main chain).
func NodeID(sessionID string, b BranchID, n int) string {
	if b == "" {
		return sessionID + ":" + strconv.Itoa(n)
	}
	return sessionID + ":" + string(b) + ":" + strconv.Itoa(n)
}

// RevisionInfo is a thought's place in the revision index (seed 003).
type RevisionInfo struct {
	// RevisedBy lists the nodes that revise this one, in creation order.
	RevisedBy []string `json:"revisedBy"`
	// RevisionDepth is 0 for a thought that revises nothing, 1 for a
	// revision of such a thought, 2 for a revision of a revision, and so on.
	RevisionDepth int `json:"revisionDepth"`
	// RevisionChainID is the node id of the original thought at the root of
	// the revision chain; an original is its own root.
	RevisionChainID string `json:"revisionChainId"`
}

// BranchInfo summarises one reasoning branch.
type BranchInfo struct {
	ID BranchID `json:"id"`
	// FromThought is the number of the main-chain thought it forks from.
	FromThought int `json:"fromThought"`
	// Origin is the fork point's node id ("" if a damaged session lost it).
	Origin string `json:"origin,omitempty"`
	Count  int    `json:"count"`
}

// Graph is the thought graph of one session: every thought, linked by chain,
// fork and revision, with O(1) lookup by node id.
//
// A Graph obtained from a SessionView is a snapshot and is never changed
// afterwards, so it may be read from any number of goroutines. The ledger
// extends only graphs it has not handed out (see Ledger.commitLocked).
type Graph struct {
	sessionID string
	nodes     map[string]*node
	order     []*node // every node, in creation order
	main      *chain
	branches  map[BranchID]*chain
	branchSeq []*chain // in creation order
	problems  []string
}

type node struct {
	ThoughtNode
	rev   RevisionInfo
	refBy []string // nodes whose cipher references name this one
	chain *chain
	pos   int // index in chain.nodes
}

type chain struct {
	id     BranchID // "" for the main chain
	from   int      // number of the fork point, for branches
	origin *node    // fork point; nil on the main chain or if lost
	nodes  []*node
	tip    CommitID // head of the chain in the store
}

func newGraph(sessionID string) *Graph {
	return &Graph{
		sessionID: sessionID,
		nodes:     map[string]*node{},
		main:      &chain{},
		branches:  map[BranchID]*chain{},
	}
}

// BuildGraph rebuilds a session's graph from what the store holds.
//
// It is lenient, because a damaged session should still be readable:
// thoughts that break the rules (a number used twice on a chain, a branch
// whose fork point is gone, a revision of a missing thought) are kept where
// possible, skipped where not, and reported by Problems.
//
// Chains are interleaved by timestamp to recover the creation order across
// chains (which orders next lists and revisedBy), never reordering a chain
// itself, and never placing a branch thought before its fork point.
func BuildGraph(s *StoredSession) *Graph {
	g := newGraph(s.Meta.ID)
	curs := g.branchCursors(s)
	mainNodes := make([]*node, len(s.Main)) // by index in s.Main; nil if skipped

	mi := 0
	for {
		best, found := nextBranchThought(s, curs, mi) // best nil means main
		if !found {
			break
		}
		if best == nil {
			t := s.Main[mi]
			if t.Data.BranchID != "" {
				g.problem("main-chain thought %d names branch %q", t.Data.ThoughtNumber, t.Data.BranchID)
				t.Data.BranchID = ""
			}
			n, err := g.applyTo(g.main, t)
			if err != nil {
				g.problem("main chain: %v", err)
			}
			mainNodes[mi] = n
			mi++
			continue
		}
		if !best.opened {
			g.openBranch(s, best, mainNodes)
		}
		t := best.b.Thoughts[best.next]
		best.next++
		if t.Data.BranchID != best.b.ID {
			g.problem("thought %d on branch %q names branch %q", t.Data.ThoughtNumber, best.b.ID, t.Data.BranchID)
			t.Data.BranchID = best.b.ID
		}
		if _, err := g.applyTo(best.chain, t); err != nil {
			g.problem("branch %q: %v", best.b.ID, err)
		}
	}

	if s.MainTip != "" {
		g.main.tip = s.MainTip
	}
	for _, cur := range curs {
		if !cur.opened { // a branch ref without thoughts
			g.openBranch(s, cur, mainNodes)
		}
		if cur.b.Tip != "" {
			cur.chain.tip = cur.b.Tip
		}
	}
	return g
}

// branchCursor is BuildGraph's place in one stored branch.
type branchCursor struct {
	b      *StoredBranch
	fork   int // index in s.Main of the fork point, -1 if unknown
	next   int
	chain  *chain
	opened bool
}

// branchCursors finds each branch's fork point on the main chain, by its
// fork commit or else by the number its first thought branches from, and
// reports a branch whose name is not a valid branch id.
func (g *Graph) branchCursors(s *StoredSession) []*branchCursor {
	mainByCommit := make(map[CommitID]int, len(s.Main))
	mainByNumber := make(map[int]int, len(s.Main))
	for i, t := range s.Main {
		mainByCommit[t.Commit] = i
		if _, ok := mainByNumber[t.Data.ThoughtNumber]; !ok {
			mainByNumber[t.Data.ThoughtNumber] = i
		}
	}
	curs := make([]*branchCursor, len(s.Branches))
	for i := range s.Branches {
		b := &s.Branches[i]
		cur := &branchCursor{b: b, fork: -1}
		if j, ok := mainByCommit[b.ForkCommit]; ok && b.ForkCommit != "" {
			cur.fork = j
		} else if len(b.Thoughts) > 0 && b.Thoughts[0].Data.BranchFromThought != nil {
			if j, ok := mainByNumber[*b.Thoughts[0].Data.BranchFromThought]; ok {
				cur.fork = j
			}
		}
		if _, err := NewBranchID(b.ID); err != nil {
			g.problem("branch %q: %v", b.ID, err)
		}
		curs[i] = cur
	}
	return curs
}

// openBranch adds cur's branch to the graph, from its fork point's node
// (mainNodes, by index in s.Main), or reports that the fork point is gone.
func (g *Graph) openBranch(s *StoredSession, cur *branchCursor, mainNodes []*node) {
	cur.opened = true
	var origin *node
	from := 0
	if cur.fork >= 0 {
		origin = mainNodes[cur.fork]
		from = s.Main[cur.fork].Data.ThoughtNumber
	} else if len(cur.b.Thoughts) > 0 && cur.b.Thoughts[0].Data.BranchFromThought != nil {
		from = *cur.b.Thoughts[0].Data.BranchFromThought
	}
	if origin == nil {
		g.problem("branch %q: fork point (thought %d) not found on the main chain", cur.b.ID, from)
	}
	cur.chain = g.addBranch(BranchID(cur.b.ID), from, origin)
}

// nextBranchThought picks whose thought comes next, mi being the next
// main-chain thought's index: the earliest by timestamp among the main
// chain's and each branch's whose fork point is already placed, ties
// going to the main chain and then to the first branch. best is nil for
// the main chain; found is false when every chain is done.
func nextBranchThought(s *StoredSession, curs []*branchCursor, mi int) (best *branchCursor, found bool) {
	if mi < len(s.Main) {
		found = true
	}
	for _, cur := range curs {
		if cur.next >= len(cur.b.Thoughts) || (cur.fork >= 0 && cur.fork >= mi) {
			continue
		}
		ts := cur.b.Thoughts[cur.next].Data.Timestamp
		switch {
		case !found:
			best, found = cur, true
		case best == nil && ts.Before(s.Main[mi].Data.Timestamp):
			best = cur
		case best != nil && ts.Before(best.b.Thoughts[best.next].Data.Timestamp):
			best = cur
		}
	}
	return best, found
}

func (g *Graph) problem(format string, args ...any) {
	g.problems = append(g.problems, fmt.Sprintf(format, args...))
}

func (g *Graph) addBranch(id BranchID, from int, origin *node) *chain {
	c := &chain{id: id, from: from, origin: origin}
	if origin != nil {
		c.tip = origin.commit
	}
	g.branches[id] = c
	g.branchSeq = append(g.branchSeq, c)
	return c
}

// apply adds a committed thought. The ledger calls it only with thoughts
// that passed plan against this same graph, so it cannot fail then.
func (g *Graph) apply(t StoredThought) (*node, error) {
	c := g.main
	if t.Data.BranchID != "" {
		id := BranchID(t.Data.BranchID)
		c = g.branches[id]
		if c == nil {
			if t.Data.BranchFromThought == nil {
				return nil, fmt.Errorf("first thought of branch %q has no branchFromThought", id)
			}
			from := *t.Data.BranchFromThought
			origin := g.mainNode(from)
			if origin == nil {
				return nil, fmt.Errorf("branch %q: no thought %d on the main chain", id, from)
			}
			c = g.addBranch(id, from, origin)
		}
	}
	return g.applyTo(c, t)
}

func (g *Graph) applyTo(c *chain, t StoredThought) (*node, error) {
	id := NodeID(g.sessionID, c.id, t.Data.ThoughtNumber)
	if g.nodes[id] != nil {
		return nil, fmt.Errorf("thought %d recorded twice (node %s); keeping the first", t.Data.ThoughtNumber, id)
	}
	n := &node{
		ThoughtNode: ThoughtNode{ID: id, Data: t.Data, BranchID: c.id, commit: t.Commit},
		rev:         RevisionInfo{RevisionChainID: id},
		chain:       c,
		pos:         len(c.nodes),
	}
	prev := c.origin
	if len(c.nodes) > 0 {
		prev = c.nodes[len(c.nodes)-1]
	}
	if prev != nil {
		n.Prev = prev.ID
		prev.Next = append(prev.Next, id)
	}
	if c.origin != nil {
		n.BranchOrigin = c.origin.ID
	}
	if t.Data.IsRevision && t.Data.RevisesThought != nil {
		if target := g.revisionTarget(c.id, c.origin, *t.Data.RevisesThought); target != nil {
			n.RevisesNode = target.ID
			n.rev.RevisionDepth = target.rev.RevisionDepth + 1
			n.rev.RevisionChainID = target.rev.RevisionChainID
			target.rev.RevisedBy = append(target.rev.RevisedBy, id)
		} else {
			g.problem("node %s revises thought %d, which is not on its chain", id, *t.Data.RevisesThought)
		}
	}
	g.resolveCipher(n)
	c.nodes = append(c.nodes, n)
	c.tip = t.Commit
	g.nodes[id] = n
	g.order = append(g.order, n)
	return n, nil
}

// revisionTarget finds thought num for a revision written on branch b
// (origin is its fork point). A main-chain thought may revise only the main
// chain. A branch thought may revise its own branch or, failing that, a
// main-chain thought at or before the fork point in chain order: the
// thoughts the branch's history contains.
func (g *Graph) revisionTarget(b BranchID, origin *node, num int) *node {
	if n := g.nodes[NodeID(g.sessionID, b, num)]; n != nil {
		return n
	}
	if b == "" || origin == nil {
		return nil
	}
	if n := g.mainNode(num); n != nil && n.pos <= origin.pos {
		return n
	}
	return nil
}

func (g *Graph) mainNode(num int) *node {
	return g.nodes[NodeID(g.sessionID, "", num)]
}

// nextNumber is the number an omitted thoughtNumber gets on c.
func (g *Graph) nextNumber(c *chain) int {
	n := c.from + 1 // 1 on an empty main chain
	if len(c.nodes) > 0 {
		n = c.nodes[len(c.nodes)-1].Data.ThoughtNumber + 1
	}
	for g.nodes[NodeID(g.sessionID, c.id, n)] != nil {
		n++
	}
	return n
}

// clone returns a deep copy that shares nothing mutable with g.
func (g *Graph) clone() *Graph {
	c := &Graph{
		sessionID: g.sessionID,
		nodes:     make(map[string]*node, len(g.nodes)),
		order:     make([]*node, len(g.order)),
		branches:  make(map[BranchID]*chain, len(g.branches)),
		branchSeq: make([]*chain, len(g.branchSeq)),
		problems:  slices.Clone(g.problems),
	}
	chains := make(map[*chain]*chain, len(g.branchSeq)+1)
	copyChain := func(old *chain) *chain {
		nc := *old
		nc.nodes = make([]*node, 0, len(old.nodes))
		chains[old] = &nc
		return &nc
	}
	c.main = copyChain(g.main)
	for i, old := range g.branchSeq {
		c.branchSeq[i] = copyChain(old)
		c.branches[old.id] = c.branchSeq[i]
	}
	for i, old := range g.order {
		n := *old
		n.Next = slices.Clone(old.Next)
		n.rev.RevisedBy = slices.Clone(old.rev.RevisedBy)
		n.refBy = slices.Clone(old.refBy)
		n.chain = chains[old.chain]
		c.order[i] = &n
		c.nodes[n.ID] = &n
	}
	for old, nc := range chains {
		for _, n := range old.nodes {
			nc.nodes = append(nc.nodes, c.nodes[n.ID])
		}
		if old.origin != nil {
			nc.origin = c.nodes[old.origin.ID]
		}
	}
	return c
}

// SessionID is the id of the session the graph belongs to.
func (g *Graph) SessionID() string { return g.sessionID }

// Len is the number of thoughts in the session, branches included.
func (g *Graph) Len() int { return len(g.order) }

// BranchCount is the number of reasoning branches.
func (g *Graph) BranchCount() int { return len(g.branchSeq) }

// Node returns the node with the given id.
func (g *Graph) Node(id string) (ThoughtNode, bool) {
	n := g.nodes[id]
	if n == nil {
		return ThoughtNode{}, false
	}
	return n.ThoughtNode, true
}

// Thought returns main-chain thought number num.
func (g *Graph) Thought(num int) (ThoughtNode, bool) {
	return g.Node(NodeID(g.sessionID, "", num))
}

// BranchThought returns thought number num of branch b.
func (g *Graph) BranchThought(b BranchID, num int) (ThoughtNode, bool) {
	return g.Node(NodeID(g.sessionID, b, num))
}

// Revision returns the revision-index entry of the node with the given id.
func (g *Graph) Revision(id string) (RevisionInfo, bool) {
	n := g.nodes[id]
	if n == nil {
		return RevisionInfo{}, false
	}
	return n.rev, true
}

// MainChain returns the main chain in creation order.
func (g *Graph) MainChain() []ThoughtNode { return values(g.main.nodes) }

// Branch returns the thoughts of branch b in creation order.
func (g *Graph) Branch(b BranchID) ([]ThoughtNode, bool) {
	c := g.branches[b]
	if c == nil {
		return nil, false
	}
	return values(c.nodes), true
}

// Branches describes every branch, in the order they were created.
func (g *Graph) Branches() []BranchInfo {
	out := make([]BranchInfo, len(g.branchSeq))
	for i, c := range g.branchSeq {
		out[i] = BranchInfo{ID: c.id, FromThought: c.from, Count: len(c.nodes)}
		if c.origin != nil {
			out[i].Origin = c.origin.ID
		}
	}
	return out
}

// BranchIDs lists the branches in the order they were created.
func (g *Graph) BranchIDs() []BranchID {
	out := make([]BranchID, len(g.branchSeq))
	for i, c := range g.branchSeq {
		out[i] = c.id
	}
	return out
}

// Nodes returns every thought of the session in creation order.
func (g *Graph) Nodes() []ThoughtNode { return values(g.order) }

// Last returns the most recently created thought on any chain.
func (g *Graph) Last() (ThoughtNode, bool) {
	if len(g.order) == 0 {
		return ThoughtNode{}, false
	}
	return g.order[len(g.order)-1].ThoughtNode, true
}

// Completed reports whether the most recent thought said no further thought
// was needed. Later thoughts are still accepted and reopen the session.
func (g *Graph) Completed() bool {
	last, ok := g.Last()
	return ok && !last.Data.NextThoughtNeeded
}

// NextNumber is the number an omitted thoughtNumber would get on branch b
// ("" for the main chain); false if there is no such branch.
func (g *Graph) NextNumber(b BranchID) (int, bool) {
	c := g.main
	if b != "" {
		c = g.branches[b]
	}
	if c == nil {
		return 0, false
	}
	return g.nextNumber(c), true
}

// Problems lists the rule violations BuildGraph found in the stored session;
// empty for a healthy one.
func (g *Graph) Problems() []string { return slices.Clone(g.problems) }

func values(ns []*node) []ThoughtNode {
	out := make([]ThoughtNode, len(ns))
	for i, n := range ns {
		out[i] = n.ThoughtNode
	}
	return out
}

// Session statuses, as the Observatory and `thoughtbox sessions --status`
// name them.
const (
	StatusActive    = "active"
	StatusCompleted = "completed"
	StatusAbandoned = "abandoned"
)

// Status decides a session's status from its last thought: completed if
// that thought asked for no more; abandoned if not, and the session was
// last updated longer than abandonAfter before now (never if abandonAfter
// is not positive); active otherwise. completedAt is the closing thought's
// time, nil unless completed.
func (g *Graph) Status(updated, now time.Time, abandonAfter time.Duration) (status string, completedAt *time.Time) {
	if last, ok := g.Last(); ok && !last.Data.NextThoughtNeeded {
		at := last.Data.Timestamp
		return StatusCompleted, &at
	}
	if abandonAfter > 0 && now.Sub(updated) > abandonAfter {
		return StatusAbandoned, nil
	}
	return StatusActive, nil
}
