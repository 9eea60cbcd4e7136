package ledger

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// LearningType classifies an ExtractedLearning (seed 002).
type LearningType string

// The kinds of learning.
const (
	// LearningPattern is an approach that worked and is worth reusing.
	LearningPattern LearningType = "pattern"
	// LearningAntiPattern is an approach that failed or should be avoided.
	LearningAntiPattern LearningType = "anti-pattern"
	// LearningSignal is an early sign worth recognising next time.
	LearningSignal LearningType = "signal"
)

// ParseLearningType accepts "pattern", "anti-pattern" or "signal".
func ParseLearningType(s string) (LearningType, bool) {
	switch t := LearningType(s); t {
	case LearningPattern, LearningAntiPattern, LearningSignal:
		return t, true
	}
	return "", false
}

// ExtractedLearning is seed 002's ExtractedLearning: something a session
// teaches, as Markdown, with the thoughts it came from and a suggested file
// for the knowledge zone.
type ExtractedLearning struct {
	Type    LearningType `json:"type"`
	Content string       `json:"content"`
	// TargetPath is a suggested path in the knowledge zone:
	// patterns/, anti-patterns/ or signals/, then the session's first tag
	// (or "general"), then a file name made of the rule, the session title
	// and the thought the learning centres on.
	TargetPath string           `json:"targetPath"`
	Metadata   LearningMetadata `json:"metadata"`
}

// LearningMetadata says where a learning came from.
type LearningMetadata struct {
	SourceSession string `json:"sourceSession"`
	// SourceThoughts are thought numbers; SourceNodes names the same
	// thoughts by node id, which tells a branch thought from the main-chain
	// thought with the same number.
	SourceThoughts []int    `json:"sourceThoughts"`
	SourceNodes    []string `json:"sourceNodes"`
	// Rule names the heuristic that found the learning (see
	// ExtractLearnings).
	Rule        string    `json:"rule"`
	ExtractedAt time.Time `json:"extractedAt"`
	// BehaviorCharacteristics scores the learning (seed 002); nil when
	// the session or the learning has too few thoughts to score.
	BehaviorCharacteristics *BehaviorCharacteristics `json:"behaviorCharacteristics,omitempty"`
}

// The rules of ExtractLearnings, in the order their findings are listed.
const (
	ruleConvergedBranch = "converged-branch"
	ruleOpenBranch      = "open-branch"
	ruleSelfCorrection  = "self-correction"
	ruleRejected        = "rejected-approach"
	ruleConclusion      = "conclusion"
	ruleContradiction   = "contradicting-evidence"
	ruleRevisionTrigger = "revision-trigger"
)

// ExtractLearnings finds what a session teaches, by these deterministic
// rules over its structure and cipher types (findings of one rule are in
// creation order, and the rules in this order):
//
//   - converged-branch (pattern): a branch after whose last thought the
//     main chain went on — alternatives were explored and a line was chosen.
//     Sources: the fork point, the branch's thoughts, the main-chain
//     thought that followed.
//   - open-branch (anti-pattern): a branch the main chain never came back
//     from — an exploration left without a decision.
//   - self-correction (pattern): a thought that was revised, with every
//     revision in its chain — a mistake caught and fixed.
//   - rejected-approach (anti-pattern): a cipher X (rejected) thought, with
//     the thoughts it cites — an option ruled out, and why.
//   - conclusion (pattern): in a completed session, the final thought and
//     the thoughts its cipher references cite (else the two main-chain
//     thoughts before it) — the path that led to the answer.
//   - contradicting-evidence (signal): a cipher E thought marked ⊖, with
//     what it cites — evidence that overturned a hypothesis.
//   - revision-trigger (signal): the thought just before a revision on its
//     chain, when that is neither the revised thought nor a revision — what
//     exposed the mistake.
//
// at is the extraction time recorded in each learning.
func ExtractLearnings(v *SessionView, at time.Time) []ExtractedLearning {
	x := &extractor{s: shapeOf(v.Graph), session: v.Session, at: at, out: []ExtractedLearning{}}
	x.branches()
	x.corrections()
	x.rejections()
	x.conclusion()
	x.contradictions()
	x.revisionTriggers()
	return x.out
}

type extractor struct {
	s       *shape
	session Session
	at      time.Time
	out     []ExtractedLearning
}

func (x *extractor) branches() {
	var open []BranchInfo
	for _, b := range x.s.branches {
		nodes := x.s.branchNodes[b.ID]
		if len(nodes) == 0 {
			continue
		}
		if !x.s.converged(b.ID) {
			open = append(open, b)
			continue
		}
		back, _ := x.s.mainAfter(x.s.pos[nodes[len(nodes)-1].ID])
		src := x.withOrigin(b, nodes)
		src = append(src, back)
		var body strings.Builder
		fmt.Fprintf(&body, "At thought %d the reasoning forked into branch `%s`, explored it for %s, and returned to the main chain at thought %s.\n\n",
			b.FromThought, b.ID, countOf(len(nodes), "thought"), thoughtLabel(back))
		x.add(LearningPattern, ruleConvergedBranch, "Explore alternatives, then decide", body.String(), string(b.ID), src)
	}
	for _, b := range open {
		nodes := x.s.branchNodes[b.ID]
		body := fmt.Sprintf("Branch `%s` forked at thought %d and ran for %s, but the main chain never continued after it: the exploration ended without a decision.\n\n",
			b.ID, b.FromThought, countOf(len(nodes), "thought"))
		x.add(LearningAntiPattern, ruleOpenBranch, "Exploration left open", body, string(b.ID), x.withOrigin(b, nodes))
	}
}

func (x *extractor) withOrigin(b BranchInfo, nodes []ThoughtNode) []ThoughtNode {
	var src []ThoughtNode
	if o, ok := x.s.g.Node(b.Origin); ok {
		src = append(src, o)
	}
	return append(src, nodes...)
}

func (x *extractor) corrections() {
	for _, n := range x.s.nodes {
		rev, _ := x.s.g.Revision(n.ID)
		if rev.RevisionDepth != 0 || len(rev.RevisedBy) == 0 {
			continue
		}
		chain := []ThoughtNode{n}
		// The revision chain, breadth first, in creation order.
		for i := 0; i < len(chain); i++ {
			r, _ := x.s.g.Revision(chain[i].ID)
			for _, id := range r.RevisedBy {
				if m, ok := x.s.g.Node(id); ok {
					chain = append(chain, m)
				}
			}
		}
		slices.SortStableFunc(chain[1:], func(a, b ThoughtNode) int { return x.s.pos[a.ID] - x.s.pos[b.ID] })
		body := fmt.Sprintf("Thought %s was corrected %s. Keeping the original and recording the correction as its own step makes the change of mind visible.\n\n",
			thoughtLabel(n), timesOf(len(chain)-1))
		x.add(LearningPattern, ruleSelfCorrection, "Catch and correct a mistake", body, thoughtLabel(n), chain)
	}
}

func (x *extractor) rejections() {
	for _, n := range x.s.nodes {
		if n.Cipher == nil || n.Cipher.Type != CipherRejected {
			continue
		}
		src := append([]ThoughtNode{n}, x.cited(n)...)
		body := fmt.Sprintf("Thought %s ruled an option out. Record what ruled it out, so that it is not tried again.\n\n", thoughtLabel(n))
		x.add(LearningAntiPattern, ruleRejected, "Rejected approach", body, thoughtLabel(n), src)
	}
}

func (x *extractor) conclusion() {
	if !x.s.g.Completed() {
		return
	}
	last := x.s.nodes[len(x.s.nodes)-1]
	src := x.cited(last)
	if len(src) == 0 && last.BranchID == "" {
		// Without references, the two main-chain thoughts before it.
		for i := len(x.s.main) - 1; i >= 0 && len(src) < 2; i-- {
			if x.s.main[i].ID != last.ID && x.s.pos[x.s.main[i].ID] < x.s.pos[last.ID] {
				src = append([]ThoughtNode{x.s.main[i]}, src...)
			}
		}
	}
	src = append(src, last)
	body := fmt.Sprintf("The session concluded at thought %s, resting on %s.\n\n", thoughtLabel(last), countOf(len(src)-1, "earlier thought"))
	x.add(LearningPattern, ruleConclusion, "Path to the conclusion", body, thoughtLabel(last), src)
}

func (x *extractor) contradictions() {
	for _, n := range x.s.nodes {
		if n.Cipher == nil || n.Cipher.Type != CipherEvidence || !strings.Contains(n.Cipher.Content, "⊖") {
			continue
		}
		src := append([]ThoughtNode{n}, x.cited(n)...)
		body := fmt.Sprintf("Thought %s found evidence against what it cites; evidence like this is the cue to drop or revise a hypothesis.\n\n", thoughtLabel(n))
		x.add(LearningSignal, ruleContradiction, "Contradicting evidence", body, thoughtLabel(n), src)
	}
}

func (x *extractor) revisionTriggers() {
	for _, n := range x.s.revisions {
		prev, ok := x.s.g.Node(n.Prev)
		if !ok || prev.ID == n.RevisesNode || prev.Data.IsRevision {
			continue
		}
		target, ok := x.s.g.Node(n.RevisesNode)
		if !ok {
			continue
		}
		body := fmt.Sprintf("Thought %s came just before thought %s revised thought %s: it is what exposed the mistake.\n\n",
			thoughtLabel(prev), thoughtLabel(n), thoughtLabel(target))
		x.add(LearningSignal, ruleRevisionTrigger, "What exposed a mistake", body, thoughtLabel(prev), []ThoughtNode{prev, n, target})
	}
}

// cited lists the thoughts n's cipher references resolved to.
func (x *extractor) cited(n ThoughtNode) []ThoughtNode {
	if n.Cipher == nil {
		return nil
	}
	var out []ThoughtNode
	seen := map[string]bool{n.ID: true}
	for _, r := range n.Cipher.Refs {
		if m, ok := x.s.g.Node(r.Node); ok && !seen[m.ID] {
			seen[m.ID] = true
			out = append(out, m)
		}
	}
	return out
}

// add records one learning: a heading, the body, and the source thoughts
// quoted one per line.
func (x *extractor) add(t LearningType, rule, heading, body, focus string, src []ThoughtNode) {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\nFrom session %q (`%s`).\n\n", heading, x.session.Title, x.session.ID)
	b.WriteString(body)
	md := LearningMetadata{
		SourceSession:  x.session.ID,
		SourceThoughts: []int{},
		SourceNodes:    []string{},
		Rule:           rule,
		ExtractedAt:    x.at,
	}
	seen := map[string]bool{}
	var used []ThoughtNode
	for _, n := range src {
		if n.ID == "" || seen[n.ID] {
			continue
		}
		seen[n.ID] = true
		used = append(used, n)
		md.SourceThoughts = append(md.SourceThoughts, n.Data.ThoughtNumber)
		md.SourceNodes = append(md.SourceNodes, n.ID)
		fmt.Fprintf(&b, "- **%s**: %s\n", thoughtLabel(n), thoughtGist(n, maxGist))
	}
	md.BehaviorCharacteristics = x.characterise(used)
	x.out = append(x.out, ExtractedLearning{
		Type:       t,
		Content:    b.String(),
		TargetPath: x.targetPath(t, rule, focus),
		Metadata:   md,
	})
}

func (x *extractor) targetPath(t LearningType, rule, focus string) string {
	dir := map[LearningType]string{
		LearningPattern: "patterns", LearningAntiPattern: "anti-patterns", LearningSignal: "signals",
	}[t]
	category := "general"
	if len(x.session.Tags) > 0 {
		if c := slugify(x.session.Tags[0], 40); c != "" {
			category = c
		}
	}
	name := rule
	if title := slugify(x.session.Title, 40); title != "" {
		name += "-" + title
	}
	if f := slugify(focus, 40); f != "" {
		name += "-" + f
	}
	return dir + "/" + category + "/" + name + ".md"
}

// maxGist bounds the quotation of a thought in generated text.
const maxGist = 160

// thoughtGist is the first non-blank line of a thought (its cipher content if it
// is a cipher line), cut to n characters.
func thoughtGist(n ThoughtNode, max int) string {
	text := n.Data.Thought
	if n.Cipher != nil {
		text = n.Cipher.Content
	}
	for line := range strings.SplitSeq(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			if utf8.RuneCountInString(line) > max {
				return strings.TrimSpace(string([]rune(line)[:max-1])) + "…"
			}
			return line
		}
	}
	return ""
}

// thoughtLabel names a thought for a reader: "3" on the main chain, "cache/3" on
// branch cache.
func thoughtLabel(n ThoughtNode) string {
	if n.BranchID == "" {
		return strconv.Itoa(n.Data.ThoughtNumber)
	}
	return string(n.BranchID) + "/" + strconv.Itoa(n.Data.ThoughtNumber)
}

func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "ch") || strings.HasSuffix(noun, "s") {
		return strconv.Itoa(n) + " " + noun + "es"
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func timesOf(n int) string {
	if n == 1 {
		return "once"
	}
	return strconv.Itoa(n) + " times"
}

// slugify turns s into lower-case ASCII words joined by '-', at most max
// bytes long, cut at a word boundary where possible.
func slugify(s string, max int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	out := b.String()
	if len(out) > max {
		out = out[:max]
		if i := strings.LastIndexByte(out, '-'); i > max/2 {
			out = out[:i]
		}
		out = strings.TrimRight(out, "-")
	}
	return out
}
