package ledger

import (
	"math"
	"strings"
	"unicode"
)

// BehaviorCharacteristics is seed 002's optional scoring of a learning,
// each score from 1 to 10. The scores are read from the learning's
// source thoughts and the session, by the rules of characterise; the
// README ("Learning scores") says what each one means.
type BehaviorCharacteristics struct {
	// Specificity: 1 very general, 10 very specific.
	Specificity int `json:"specificity"`
	// Applicability: how broadly the learning applies.
	Applicability int `json:"applicability"`
	// Complexity: how much it takes to carry out.
	Complexity int `json:"complexity"`
	// Maturity: how proven it is.
	Maturity int `json:"maturity"`
}

// Below these a learning is not scored: one thought, or a session of two,
// says too little for a score to mean anything.
const (
	minScoredSources  = 2
	minScoredThoughts = 3
)

// characterise scores a learning drawn from src, or returns nil when the
// session or the learning has too few thoughts to score. Every score is
// 1 + 9 × a share from 0 to 1, rounded:
//
//   - specificity: the share of the source thoughts' words (after a
//     cipher header) that are
//     concrete — holding a digit or a character other than a letter or
//     plain punctuation (numbers, identifiers, paths, code) — counted as
//     full at one such word in five;
//   - applicability: half the share of source thoughts on the main chain
//     (reasoning the whole session went on from), half how often later
//     thoughts cite the sources (full at three citations);
//   - complexity: the source thoughts beyond the first, plus two for each
//     branch they span, out of nine;
//   - maturity: 0.6 × the share of sources that are evidence, conclusions
//     or revisions (cipher E, C or R, or recorded as revisions), plus 0.4
//     if the session is complete.
func (x *extractor) characterise(src []ThoughtNode) *BehaviorCharacteristics {
	if len(src) < minScoredSources || len(x.s.nodes) < minScoredThoughts {
		return nil
	}
	var words, concrete, onMain, settled, cites int
	branches := map[BranchID]bool{}
	for _, n := range src {
		text := n.Data.Thought
		if n.Cipher != nil {
			text = n.Cipher.Content // the S{n}|{type}|{refs} header is notation, not detail
		}
		for _, w := range strings.Fields(text) {
			words++
			if isConcrete(w) {
				concrete++
			}
		}
		if n.BranchID == "" {
			onMain++
		} else {
			branches[n.BranchID] = true
		}
		if n.Data.IsRevision || n.Cipher != nil && (n.Cipher.Type == CipherEvidence || n.Cipher.Type == CipherConclusion || n.Cipher.Type == CipherRevision) {
			settled++
		}
		cites += len(x.s.g.ReferencedBy(n.ID))
	}
	share := func(a, b float64) float64 {
		if b <= 0 {
			return 0
		}
		return min(1, a/b)
	}
	completed := 0.0
	if x.s.g.Completed() {
		completed = 1
	}
	k := float64(len(src))
	return &BehaviorCharacteristics{
		Specificity:   score(share(5*float64(concrete), float64(words))),
		Applicability: score(0.5*share(float64(onMain), k) + 0.5*share(float64(cites), 3)),
		Complexity:    score(share(k-1+2*float64(len(branches)), 9)),
		Maturity:      score(0.6*share(float64(settled), k) + 0.4*completed),
	}
}

// score maps a share from 0 to 1 onto 1..10.
func score(f float64) int { return 1 + int(math.Round(9*max(0, min(1, f)))) }

// isConcrete says whether a word names something exact: a number, an
// identifier, a path, code.
func isConcrete(w string) bool {
	w = strings.Trim(w, ".,;:!?\"'()[]")
	for _, r := range w {
		if unicode.IsDigit(r) || !unicode.IsLetter(r) && r != '-' && r != '\'' {
			return true
		}
	}
	return false
}
