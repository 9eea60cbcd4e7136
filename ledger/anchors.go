package ledger

// Cross-session anchors (seed 004, "Cross-session references"): a thought
// may point into another session with @keyword:S42 or @keyword:S1-S3. An
// export with resolveAnchors finds the session each keyword names and the
// thoughts it points at, and reports the anchors it could not resolve.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// Anchor is one @keyword:S{from}[-S{to}] reference as written.
type Anchor struct {
	// Text is the anchor as written, e.g. "@auth-bug:S1-S3".
	Text    string `json:"anchor"`
	Keyword string `json:"keyword"`
	From    int    `json:"from"`
	To      int    `json:"to"`
}

// ParseAnchors finds the anchors in a thought, in order of appearance.
//
// An anchor is '@', a keyword of ASCII letters, digits, '_', '.' and '-'
// starting with a letter or digit, ':', then S{n} or a range S{n}-S{m}
// (S{n}-{m} is read the same). An '@' right after a letter, digit or one of
// "_.-" is not an anchor, so e-mail addresses are left alone. Numbers run
// from 1 to MaxThoughtNumber; anything else is not an anchor.
func ParseAnchors(text string) []Anchor {
	var out []Anchor
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || (i > 0 && isKeywordByte(text[i-1])) {
			continue
		}
		a, n, ok := parseAnchor(text[i:])
		if !ok {
			continue
		}
		out = append(out, a)
		i += n - 1
	}
	return out
}

// parseAnchor reads an anchor at the start of s and returns its length.
func parseAnchor(s string) (Anchor, int, bool) {
	i := 1
	for i < len(s) && isKeywordByte(s[i]) {
		i++
	}
	keyword := strings.TrimRight(s[1:i], "._-")
	i = 1 + len(keyword)
	if keyword == "" || !isAlnum(keyword[0]) || i >= len(s) || s[i] != ':' || i+1 >= len(s) || s[i+1] != 'S' {
		return Anchor{}, 0, false
	}
	from, n := leadingNumber(s[i+2:])
	if n == 0 {
		return Anchor{}, 0, false
	}
	end := i + 2 + n
	to := from
	if end+1 < len(s) && s[end] == '-' {
		j := end + 1
		if s[j] == 'S' {
			j++
		}
		if m, k := leadingNumber(s[j:]); k > 0 {
			to, end = m, j+k
		}
	}
	return Anchor{Text: s[:end], Keyword: keyword, From: from, To: to}, end, true
}

// leadingNumber reads a thought number at the start of s and returns its
// length, 0 if there is none.
func leadingNumber(s string) (int, int) {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	v, ok := parseNumber(s[:n])
	if !ok {
		return 0, 0
	}
	return v, n
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isKeywordByte(c byte) bool {
	return isAlnum(c) || c == '_' || c == '.' || c == '-'
}

// AnchorStrategy names how an anchor's keyword found its session.
type AnchorStrategy string

// The strategies, in the order they are tried.
const (
	AnchorByAlias AnchorStrategy = "alias"
	AnchorByTag   AnchorStrategy = "tag"
	AnchorByTitle AnchorStrategy = "title"
)

// minTitleSimilarity is the least title similarity that resolves a
// keyword (see MatchAnchorSession).
const minTitleSimilarity = 0.6

// MatchAnchorSession finds the session a keyword names, trying in turn:
//
//  1. alias: the keyword is a session's id, a unique prefix of at least
//     four characters of one (as with `thoughtbox show`), or the slug of
//     its title ("Why is the API slow?" → why-is-the-api-slow); all
//     ignoring case;
//  2. tag: a session has the keyword as a tag, ignoring case;
//  3. title similarity: with K the keyword's words and W the title's
//     (split at anything but letters and digits, lower-cased), the score
//     0.7·|K∩W|/|K| + 0.3·|K∩W|/|W| — mostly "are the keyword's words in
//     the title", a little "is that most of the title" — must be at least
//     0.6; the highest score wins.
//
// Where several sessions qualify at one step, the most recently updated
// wins (then the smaller id), so the answer does not depend on list order.
func MatchAnchorSession(keyword string, sessions []Session) (Session, AnchorStrategy, bool) {
	k := strings.ToLower(keyword)
	newest := func(a, b Session) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), strings.Compare(a.ID, b.ID))
	}
	var prefixed []Session
	var slugged []Session
	for _, s := range sessions {
		id := strings.ToLower(s.ID)
		switch {
		case id == k:
			return s, AnchorByAlias, true
		case len(k) >= 4 && strings.HasPrefix(id, k):
			prefixed = append(prefixed, s)
		}
		if slugify(s.Title, len(s.Title)+1) == k {
			slugged = append(slugged, s)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0], AnchorByAlias, true
	}
	if len(slugged) > 0 {
		return slices.MinFunc(slugged, newest), AnchorByAlias, true
	}

	var tagged []Session
	for _, s := range sessions {
		if slices.ContainsFunc(s.Tags, func(t string) bool { return strings.EqualFold(t, keyword) }) {
			tagged = append(tagged, s)
		}
	}
	if len(tagged) > 0 {
		return slices.MinFunc(tagged, newest), AnchorByTag, true
	}

	words := wordSet(keyword)
	if len(words) == 0 {
		return Session{}, "", false
	}
	var best Session
	bestScore := 0.0
	for _, s := range sessions {
		score := titleSimilarity(words, wordSet(s.Title))
		if score < minTitleSimilarity {
			continue
		}
		if score > bestScore || score == bestScore && newest(s, best) < 0 {
			best, bestScore = s, score
		}
	}
	if bestScore == 0 {
		return Session{}, "", false
	}
	return best, AnchorByTitle, true
}

func titleSimilarity(k, w map[string]bool) float64 {
	if len(k) == 0 || len(w) == 0 {
		return 0
	}
	common := 0
	for x := range k {
		if w[x] {
			common++
		}
	}
	return 0.7*float64(common)/float64(len(k)) + 0.3*float64(common)/float64(len(w))
}

func wordSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, t := range searchTerms(s) {
		out[t] = true
	}
	return out
}

// AnchorRef is one anchor found in one thought.
type AnchorRef struct {
	Anchor
	SourceNode    string `json:"sourceNode"`
	SourceThought int    `json:"sourceThought"`
}

// ResolvedAnchor is an anchor whose session and thoughts were found.
type ResolvedAnchor struct {
	AnchorRef
	SessionID    string         `json:"sessionId"`
	SessionTitle string         `json:"sessionTitle"`
	Strategy     AnchorStrategy `json:"strategy"`
	// Nodes are the main-chain thoughts of the target numbered From to To.
	Nodes []string `json:"nodes"`
}

// UnresolvedAnchor is an anchor that could not be resolved, and why.
type UnresolvedAnchor struct {
	AnchorRef
	Reason string `json:"reason"`
}

// AnchorReport is the outcome of resolving a session's anchors.
type AnchorReport struct {
	Resolved   []ResolvedAnchor   `json:"resolved"`
	Unresolved []UnresolvedAnchor `json:"unresolved"`
}

// ResolveAnchors resolves every anchor in a session's thoughts (creation
// order; an anchor repeated in one thought counts once). The session is
// found by MatchAnchorSession among the ledger's sessions; the anchor
// resolves if that session's main chain has thoughts From and To, and
// points at its main-chain thoughts numbered between them.
func (l *Ledger) ResolveAnchors(ctx context.Context, v *SessionView) (*AnchorReport, error) {
	r := &AnchorReport{Resolved: []ResolvedAnchor{}, Unresolved: []UnresolvedAnchor{}}
	var refs []AnchorRef
	for _, n := range v.Graph.Nodes() {
		seen := map[string]bool{}
		for _, a := range ParseAnchors(n.Data.Thought) {
			if !seen[a.Text] {
				seen[a.Text] = true
				refs = append(refs, AnchorRef{Anchor: a, SourceNode: n.ID, SourceThought: n.Data.ThoughtNumber})
			}
		}
	}
	if len(refs) == 0 {
		return r, nil
	}
	sessions, err := l.List(ctx)
	if err != nil {
		return nil, err
	}
	graphs := map[string]*Graph{v.Session.ID: v.Graph}
	for _, a := range refs {
		unresolved := func(format string, args ...any) {
			r.Unresolved = append(r.Unresolved, UnresolvedAnchor{AnchorRef: a, Reason: fmt.Sprintf(format, args...)})
		}
		if a.To < a.From {
			unresolved("the range runs backwards (S%d-S%d)", a.From, a.To)
			continue
		}
		s, how, ok := MatchAnchorSession(a.Keyword, sessions)
		if !ok {
			unresolved("no session has %q as its id, title slug or tag, or a title like it", a.Keyword)
			continue
		}
		g := graphs[s.ID]
		if g == nil {
			tv, err := l.View(ctx, s.ID)
			if err != nil {
				unresolved("session %s could not be read: %v", s.ID, err)
				continue
			}
			g, graphs[s.ID] = tv.Graph, tv.Graph
		}
		var missing []string
		for _, num := range []int{a.From, a.To} {
			if _, ok := g.Thought(num); !ok && !slices.Contains(missing, fmt.Sprint(num)) {
				missing = append(missing, fmt.Sprint(num))
			}
		}
		if len(missing) > 0 {
			unresolved("session %q (%s, by %s) has no thought %s on its main chain", s.Title, s.ID, how, strings.Join(missing, " or "))
			continue
		}
		res := ResolvedAnchor{AnchorRef: a, SessionID: s.ID, SessionTitle: s.Title, Strategy: how, Nodes: []string{}}
		for _, n := range g.MainChain() {
			if num := n.Data.ThoughtNumber; num >= a.From && num <= a.To {
				res.Nodes = append(res.Nodes, n.ID)
			}
		}
		r.Resolved = append(r.Resolved, res)
	}
	return r, nil
}
