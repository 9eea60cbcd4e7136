package ledger

import (
	"slices"
	"strconv"
	"strings"
)

// CipherType is the step-type marker of a thought written in cipher
// notation (seed 000, "Cipher Protocol"): one capital letter.
type CipherType string

// The step-type markers.
const (
	CipherHypothesis  CipherType = "H"
	CipherEvidence    CipherType = "E"
	CipherConclusion  CipherType = "C"
	CipherQuestion    CipherType = "Q"
	CipherRevision    CipherType = "R"
	CipherPlan        CipherType = "P"
	CipherObservation CipherType = "O"
	CipherAssumption  CipherType = "A"
	CipherRejected    CipherType = "X"
)

// CipherTypes lists every marker, in the order the cipher guide gives them.
func CipherTypes() []CipherType {
	return []CipherType{
		CipherHypothesis, CipherEvidence, CipherConclusion, CipherQuestion, CipherRevision,
		CipherPlan, CipherObservation, CipherAssumption, CipherRejected,
	}
}

var cipherNames = map[CipherType]string{
	CipherHypothesis:  "hypothesis",
	CipherEvidence:    "evidence",
	CipherConclusion:  "conclusion",
	CipherQuestion:    "question",
	CipherRevision:    "revision",
	CipherPlan:        "plan",
	CipherObservation: "observation",
	CipherAssumption:  "assumption",
	CipherRejected:    "rejected",
}

// Name is the marker's meaning in lower case ("hypothesis"); "" for a
// string that is not a marker.
func (t CipherType) Name() string { return cipherNames[t] }

// ParseCipherType accepts a marker ("H") or its name ("hypothesis"), in
// any case.
func ParseCipherType(s string) (CipherType, bool) {
	s = strings.TrimSpace(s)
	if t := CipherType(strings.ToUpper(s)); cipherNames[t] != "" {
		return t, true
	}
	for t, name := range cipherNames {
		if strings.EqualFold(s, name) {
			return t, true
		}
	}
	return "", false
}

// CipherRef is one reference of a cipher thought to another thought.
type CipherRef struct {
	// Thought is the referenced thought's number (N in SN).
	Thought int `json:"thought"`
	// Revision is set for ^SN and ^[SN]: the thought revises thought N.
	Revision bool `json:"revision,omitempty"`
	// Inline is set for a [SN] found in the content rather than in the
	// references field.
	Inline bool `json:"inline,omitempty"`
	// Node is the id of the referenced node, resolved when the thought
	// joined the graph: thought N on the thought's own chain, else on the
	// main chain. "" if there was no such thought then.
	Node string `json:"node,omitempty"`
}

// CipherInfo is what a thought written in cipher notation declares.
type CipherInfo struct {
	// Step is the number the line gives itself (N in SN).
	Step int `json:"step"`
	// Alias is the step id the thought's author wrote, in a line that
	// reads S{n}=S{alias}: the cipher export names every step by its
	// thought number, and keeps the author's own id, when it differs, as
	// this alias (see CipherExportInfo).
	Alias int         `json:"alias,omitempty"`
	Type  CipherType  `json:"type"`
	Refs  []CipherRef `json:"refs,omitempty"`
	// Content is the text after the header: the rest of the first line,
	// and any further lines.
	Content string `json:"content"`
	// Confidence is how sure the thought says it is, from a marker in its
	// content (see parseConfidence); nil when it says nothing.
	Confidence *CipherConfidence `json:"confidence,omitempty"`
}

// CipherConfidence is a confidence marker of a cipher thought:
// "(conf 0.7)", "(conf 70%)" or "(conf high)" — "confidence" may be spelled
// out. Exactly one of Value and Level is set.
type CipherConfidence struct {
	// Value is a numeric confidence from 0 to 1 (a percentage is divided
	// by 100).
	Value *float64 `json:"value,omitempty"`
	// Level is a word: low, medium or high.
	Level string `json:"level,omitempty"`
	// Marker is the marker as written, so that exports can show it.
	Marker string `json:"marker"`
}

// confidenceLevels are the words a confidence marker may use.
var confidenceLevels = []string{"low", "medium", "high"}

// parseConfidence finds the first confidence marker in content: an opening
// parenthesis, "conf" or "confidence", spaces or a colon, then a number
// from 0 to 1, a percentage, or low|medium|high, and a closing
// parenthesis. Case is ignored.
func parseConfidence(content string) *CipherConfidence {
	lower := strings.ToLower(content)
	for from := 0; ; {
		i := strings.Index(lower[from:], "(conf")
		if i < 0 {
			return nil
		}
		start := from + i
		from = start + 1
		end := strings.IndexByte(lower[start:min(len(lower), start+32)], ')')
		if end < 0 {
			continue
		}
		inner := lower[start+1 : start+end]
		word, ok := strings.CutPrefix(inner, "confidence")
		if !ok {
			word, _ = strings.CutPrefix(inner, "conf")
		}
		if word == "" || (word[0] != ' ' && word[0] != ':') {
			continue
		}
		word = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(word), ":"))
		c := &CipherConfidence{Marker: content[start : start+end+1]}
		if slices.Contains(confidenceLevels, word) {
			c.Level = word
			return c
		}
		pct := strings.HasSuffix(word, "%")
		v, err := strconv.ParseFloat(strings.TrimSuffix(word, "%"), 64)
		if err != nil || strings.ContainsAny(word, "eE") {
			continue
		}
		if pct {
			v /= 100
		}
		if v < 0 || v > 1 {
			continue
		}
		c.Value = &v
		return c
	}
}

// ParseCipher parses a thought written as a cipher line,
//
//	S{n}|{type}|{refs}|{content}     or     S{n}|{type}|{content}
//
// from its first line. The step may be written S12 or 12, or S12=S5 (step
// 12, which its author called S5: the form the cipher export writes); the type is one of
// the markers H E C Q R P O A X; refs is a comma-separated list of S12, [S12],
// ^S12 or ^[S12] (^ marks a revision) and may be empty. A third field that
// is not a reference list is the start of the content, so content may hold
// '|'. References written as [S12] or ^[S12] inside the content are added
// after those of the refs field, marked Inline. Spaces around the fields are
// ignored.
//
// Parsing is total and deterministic: anything else — no header, an unknown
// marker, empty content — is not cipher, and ok is false. The ledger never
// rejects a thought for that; it is simply plain text.
func ParseCipher(thought string) (info CipherInfo, ok bool) {
	first, rest, multiline := strings.Cut(thought, "\n")
	first = strings.TrimSpace(first)
	fields := strings.SplitN(first, "|", 4)
	if len(fields) < 3 {
		return CipherInfo{}, false
	}
	stepField, aliasField, aliased := strings.Cut(strings.TrimSpace(fields[0]), "=")
	step, ok := parseStep(strings.TrimSpace(stepField))
	if !ok {
		return CipherInfo{}, false
	}
	alias := 0
	if aliased {
		if alias, ok = parseStep(strings.TrimSpace(aliasField)); !ok {
			return CipherInfo{}, false
		}
	}
	typ := CipherType(strings.TrimSpace(fields[1]))
	if cipherNames[typ] == "" {
		return CipherInfo{}, false
	}
	info = CipherInfo{Step: step, Alias: alias, Type: typ}
	content := strings.Join(fields[2:], "|")
	if len(fields) == 4 {
		if refs, ok := parseRefList(fields[2]); ok {
			info.Refs = refs
			content = fields[3]
		}
	}
	content = strings.TrimSpace(content)
	if multiline {
		content = strings.TrimRight(content+"\n"+rest, " \t\r\n")
	}
	if strings.TrimSpace(content) == "" {
		return CipherInfo{}, false
	}
	info.Content = content
	info.Confidence = parseConfidence(content)
	for _, r := range inlineRefs(content) {
		if !hasRef(info.Refs, r) {
			info.Refs = append(info.Refs, r)
		}
	}
	return info, true
}

// parseStep reads "S12" or "12".
func parseStep(s string) (int, bool) {
	s = strings.TrimPrefix(s, "S")
	return parseNumber(s)
}

// parseNumber reads a thought number: decimal digits only, 1 to
// MaxThoughtNumber.
func parseNumber(s string) (int, bool) {
	if s == "" || len(s) > 10 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxThoughtNumber {
		return 0, false
	}
	return n, true
}

// parseRefList reads a references field: empty, or comma-separated refs.
func parseRefList(s string) ([]CipherRef, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, true
	}
	var refs []CipherRef
	for item := range strings.SplitSeq(s, ",") {
		r, ok := parseRef(strings.TrimSpace(item))
		if !ok {
			return nil, false
		}
		if !hasRef(refs, r) {
			refs = append(refs, r)
		}
	}
	return refs, true
}

// parseRef reads S12, [S12], ^S12 or ^[S12].
func parseRef(s string) (CipherRef, bool) {
	var r CipherRef
	if rest, ok := strings.CutPrefix(s, "^"); ok {
		r.Revision = true
		s = rest
	}
	if inner, ok := strings.CutPrefix(s, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return CipherRef{}, false
		}
		s = inner
	}
	num, ok := strings.CutPrefix(s, "S")
	if !ok {
		return CipherRef{}, false
	}
	n, ok := parseNumber(num)
	if !ok {
		return CipherRef{}, false
	}
	r.Thought = n
	return r, true
}

// maxRefLength is the length of the longest bracketed reference, "[S" plus
// ten digits plus "]".
const maxRefLength = 13

// inlineRefs finds [SN] and ^[SN] in content, in order of appearance.
func inlineRefs(content string) []CipherRef {
	var refs []CipherRef
	for i := 0; i < len(content); i++ {
		if content[i] != '[' {
			continue
		}
		// A reference is short ("^[S1000000000]"); looking no further
		// keeps the scan linear on text full of brackets.
		end := strings.IndexByte(content[i:min(len(content), i+maxRefLength)], ']')
		if end < 0 {
			continue
		}
		r, ok := parseRef(content[i : i+end+1])
		if !ok {
			continue
		}
		r.Revision = i > 0 && content[i-1] == '^'
		r.Inline = true
		if !hasRef(refs, r) {
			refs = append(refs, r)
		}
		i += end
	}
	return refs
}

// hasRef reports whether refs already names r's thought with r's kind.
func hasRef(refs []CipherRef, r CipherRef) bool {
	for _, have := range refs {
		if have.Thought == r.Thought && have.Revision == r.Revision {
			return true
		}
	}
	return false
}

// resolveCipher parses n's thought and resolves its references against the
// graph as it stands when n joins it; it records the reverse edges.
func (g *Graph) resolveCipher(n *node) {
	info, ok := ParseCipher(n.Data.Thought)
	if !ok {
		return
	}
	for i := range info.Refs {
		target := g.referenceTarget(n.chain, info.Refs[i].Thought)
		if target == nil || target == n {
			continue
		}
		info.Refs[i].Node = target.ID
		if !containsString(target.refBy, n.ID) {
			target.refBy = append(target.refBy, n.ID)
		}
	}
	n.Cipher = &info
}

// referenceTarget finds thought num as seen from chain c: on c itself, else
// on the main chain.
func (g *Graph) referenceTarget(c *chain, num int) *node {
	if t := g.nodes[NodeID(g.sessionID, c.id, num)]; t != nil {
		return t
	}
	return g.mainNode(num)
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ReferencedBy lists the nodes whose cipher references name the node with
// the given id, in creation order.
func (g *Graph) ReferencedBy(id string) []string {
	n := g.nodes[id]
	if n == nil {
		return nil
	}
	return append([]string(nil), n.refBy...)
}

// String renders the thought as a cipher line that ParseCipher reads back
// to the same CipherInfo (references found inline stay in the content).
func (c CipherInfo) String() string {
	var b strings.Builder
	b.WriteString("S")
	b.WriteString(strconv.Itoa(c.Step))
	if c.Alias != 0 {
		b.WriteString("=S")
		b.WriteString(strconv.Itoa(c.Alias))
	}
	b.WriteString("|")
	b.WriteString(string(c.Type))
	b.WriteString("|")
	sep := ""
	for _, r := range c.Refs {
		if r.Inline {
			continue
		}
		b.WriteString(sep)
		if r.Revision {
			b.WriteString("^")
		}
		b.WriteString("S")
		b.WriteString(strconv.Itoa(r.Thought))
		sep = ","
	}
	b.WriteString("|")
	b.WriteString(c.Content)
	return b.String()
}

// CipherExportInfo is what the cipher export writes for a thought parsed as
// info: its step id is its thought number, so that no two lines of an
// export share an id whatever the agent wrote, and the agent's own id,
// when it differs, stays as the alias (S2=S5).
func CipherExportInfo(info CipherInfo, thoughtNumber int) CipherInfo {
	if info.Step != thoughtNumber {
		if info.Alias == 0 {
			info.Alias = info.Step
		}
		info.Step = thoughtNumber
	}
	if info.Alias == info.Step {
		info.Alias = 0
	}
	return info
}

// revisionFromCipher makes a cipher line's revision reference the thought's
// revision: a line whose refs field holds exactly one ^S{n} (as
// "S3|R|^S1|…" does) revises thought n, as if isRevision and
// revisesThought had been sent. A revisesThought that names another thought
// contradicts the line and is refused. It reports whether it filled the
// fields in.
func (in *ThoughtInput) revisionFromCipher() (inferred bool, err error) {
	info, ok := ParseCipher(in.Thought)
	if !ok {
		return false, nil
	}
	target := 0
	for _, r := range info.Refs {
		if !r.Revision || r.Inline {
			continue
		}
		if target != 0 {
			return false, nil // several: the line does not say which one
		}
		target = r.Thought
	}
	if target == 0 {
		return false, nil
	}
	if in.NotRevision {
		return false, InvalidField("isRevision",
			"is false, but the cipher line revises S%d (^S%d); leave isRevision out (or send true with revisesThought %d), or write S%d without ^ for a plain reference",
			target, target, target, target).with("cipherRevises", target)
	}
	if in.RevisesThought != nil {
		if *in.RevisesThought != target {
			return false, InvalidField("revisesThought",
				"is %d, but the cipher line revises S%d (^S%d); make them agree, or leave revisesThought out and let the line say it",
				*in.RevisesThought, target, target).with("cipherRevises", target)
		}
		in.IsRevision = true
		return false, nil
	}
	in.IsRevision = true
	in.RevisesThought = &target
	return true, nil
}
