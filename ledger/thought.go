package ledger

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// BranchID names a reasoning branch. It becomes part of a Git ref name and of
// node ids, hence the narrow alphabet of seed 002.
type BranchID string

// MaxBranchIDLength bounds a branch id so that the ref path stays well below
// file-name limits of the filesystems a ledger lives on.
const MaxBranchIDLength = 100

// MaxThoughtNumber bounds every thought number an agent may give, so that
// numbering after it cannot overflow.
const MaxThoughtNumber = 1_000_000_000

// branchIDPattern is the pattern of seed 002, quoted in error messages.
const branchIDPattern = "^[a-z0-9-]+$"

// NewBranchID validates s as a branch id (^[a-z0-9-]+$, at most
// MaxBranchIDLength bytes).
func NewBranchID(s string) (BranchID, error) {
	if s == "" || !validBranchID(s) {
		return "", InvalidField("branchId", "must match %s, got %q", branchIDPattern, s)
	}
	if len(s) > MaxBranchIDLength {
		return "", InvalidField("branchId", "must be at most %d characters, got %d", MaxBranchIDLength, len(s))
	}
	return BranchID(s), nil
}

func validBranchID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ThoughtInput is a thought as an agent submits it (seed 002 ThoughtInput,
// without the timestamp, which the ledger sets). Optional numbers are
// pointers: nil means "let the ledger choose".
//
// The critique request flag is not here: asking a model for a critique is the
// gateway's business, and the critique itself is stored later.
type ThoughtInput struct {
	Thought           string `json:"thought"`
	ThoughtNumber     *int   `json:"thoughtNumber,omitempty"`
	TotalThoughts     *int   `json:"totalThoughts,omitempty"`
	NextThoughtNeeded bool   `json:"nextThoughtNeeded"`
	IsRevision        bool   `json:"isRevision,omitempty"`
	RevisesThought    *int   `json:"revisesThought,omitempty"`
	BranchFromThought *int   `json:"branchFromThought,omitempty"`
	BranchID          string `json:"branchId,omitempty"`
	NeedsMoreThoughts bool   `json:"needsMoreThoughts,omitempty"`
	IncludeGuide      bool   `json:"includeGuide,omitempty"`
	// Code names the code the thought is about; NormalizeCode's rules.
	Code []CodeRef `json:"code,omitempty"`
	// NotRevision says the agent sent isRevision: false in so many words,
	// which a cipher line that revises (^S{n}) contradicts. It is not
	// stored.
	NotRevision bool `json:"-"`
	// RLM, if set, is committed with the thought (see ThoughtData.RLM). It
	// is the outcome of work the gateway did, not something an agent
	// submits, hence no JSON name.
	RLM *RLMResult `json:"-"`
}

// validate checks the rules that need no session: required fields, number
// ranges, and which fields must come together. It returns the branch the
// thought is for ("" for the main chain).
func (in ThoughtInput) validate() (BranchID, error) {
	if strings.TrimSpace(in.Thought) == "" {
		return "", InvalidField("thought", "must not be empty")
	}
	if _, err := NormalizeCode(in.Code); err != nil {
		return "", err
	}
	for _, f := range []struct {
		name string
		v    *int
	}{
		{"thoughtNumber", in.ThoughtNumber},
		{"totalThoughts", in.TotalThoughts},
		{"revisesThought", in.RevisesThought},
		{"branchFromThought", in.BranchFromThought},
	} {
		if f.v != nil && *f.v < 1 {
			return "", InvalidField(f.name, "must be at least 1, got %d", *f.v)
		}
		if f.v != nil && *f.v > MaxThoughtNumber {
			return "", InvalidField(f.name, "must be at most %d, got %d", MaxThoughtNumber, *f.v)
		}
	}
	switch {
	case in.BranchID == "" && in.BranchFromThought != nil:
		return "", InvalidField("branchId", "is required when branchFromThought is set (must match %s)", branchIDPattern)
	case in.IsRevision && in.RevisesThought == nil:
		return "", InvalidField("revisesThought", "is required when isRevision is true")
	case !in.IsRevision && in.RevisesThought != nil:
		return "", InvalidField("isRevision", "must be true when revisesThought is set")
	}
	if in.BranchID == "" {
		return "", nil
	}
	return NewBranchID(in.BranchID)
}

// plan is a validated, numbered thought, ready for Store.Append.
type plan struct {
	data      ThoughtData // without timestamp
	branch    BranchID
	newBranch bool
	tip       CommitID // expected head of the chain (the origin's commit for a new branch)
	revises   CommitID
	origin    *node // fork point, for branch thoughts
}

// plan applies the rules that need the session: numbering, branch origins
// and revision targets. in must have passed validate, which returned branch.
//
// Numbering: an explicit thoughtNumber is taken as given (gaps and backward
// runs are fine) unless it is already used on the same chain. An omitted one
// is the last committed number on the chain plus one, skipped past numbers
// already used; the first thought of a new branch gets branchFromThought+1.
// totalThoughts is raised to the thought's number; omitted, it keeps the
// estimate of the chain's last thought (see totalThoughts).
func (g *Graph) plan(in ThoughtInput, branch BranchID) (plan, error) {
	p := plan{branch: branch}
	c := g.main
	if branch != "" {
		c = g.branches[branch]
		if in.BranchFromThought == nil {
			// Continuing a branch needs only its id: the fork point is
			// the branch's own. Starting one needs the fork point.
			if c == nil {
				return plan{}, InvalidField("branchFromThought",
					"is required to start the branch %q (the main-chain thought it forks from); an existing branch continues with branchId alone", branch).
					with("branchId", string(branch))
			}
			in.BranchFromThought = &c.from
		}
		from := *in.BranchFromThought
		if c != nil {
			if c.from != from {
				return plan{}, InvalidField("branchFromThought",
					"branch %q forks from thought %d, got %d", branch, c.from, from).
					with("branchId", string(branch))
			}
			p.origin = c.origin
		} else {
			p.origin = g.mainNode(from)
			if p.origin == nil {
				return plan{}, thoughtNotFound("branchFromThought",
					"no thought %d on the main chain to branch from", from).
					with("thoughtNumber", from)
			}
			p.newBranch = true
			p.tip = p.origin.commit
		}
	}
	if c != nil {
		p.tip = c.tip
	}

	var num int
	switch {
	case in.ThoughtNumber == nil && c == nil:
		num = *in.BranchFromThought + 1
	case in.ThoughtNumber == nil:
		num = g.nextNumber(c)
	default:
		num = *in.ThoughtNumber
		if c != nil && g.nodes[NodeID(g.sessionID, c.id, num)] != nil {
			return plan{}, InvalidField("thoughtNumber",
				"%d is already used on %s; omit thoughtNumber to take the next free number (%d): %w",
				num, chainName(branch), g.nextNumber(c), ErrNumberTaken).
				with("thoughtNumber", num).
				with("nextThoughtNumber", g.nextNumber(c))
		}
	}

	if in.IsRevision {
		target := g.revisionTarget(branch, p.origin, *in.RevisesThought)
		if target == nil {
			where := "on " + chainName(branch)
			if branch != "" && p.origin != nil {
				where += fmt.Sprintf(" or on the main chain up to its fork at thought %d", p.origin.Data.ThoughtNumber)
			}
			return plan{}, thoughtNotFound("revisesThought", "no thought %d %s to revise",
				*in.RevisesThought, where).
				with("thoughtNumber", *in.RevisesThought)
		}
		p.revises = target.commit
	}

	code, err := NormalizeCode(in.Code)
	if err != nil {
		return plan{}, err
	}
	p.data = ThoughtData{
		Thought:           in.Thought,
		ThoughtNumber:     num,
		TotalThoughts:     totalThoughts(in.TotalThoughts, num, lastTotal(c, p.origin)),
		NextThoughtNeeded: in.NextThoughtNeeded,
		IsRevision:        in.IsRevision,
		RevisesThought:    clonePtr(in.RevisesThought),
		BranchFromThought: clonePtr(in.BranchFromThought),
		BranchID:          string(branch),
		NeedsMoreThoughts: in.NeedsMoreThoughts,
		IncludeGuide:      in.IncludeGuide,
		RLM:               in.RLM,
		Code:              code,
	}
	return p, nil
}

// totalThoughts is a thought's estimate of the session's length: what the
// agent says, or, when it says nothing, what it last said on this chain
// (last, 0 for none), so that an agent that said 12 and then omits the
// field does not see the estimate fall to 8, 9, … with each thought. It is
// never below the thought's own number. Only the agent lowers it, by
// saying a smaller number.
func totalThoughts(said *int, num, last int) int {
	total := last
	if said != nil {
		total = *said
	}
	return max(total, num)
}

// lastTotal is the estimate of the last thought of chain c, or, for the
// first thought of a new branch (c nil or empty), of the thought it forks
// from; 0 when there is none.
func lastTotal(c *chain, origin *node) int {
	switch {
	case c != nil && len(c.nodes) > 0:
		return c.nodes[len(c.nodes)-1].Data.TotalThoughts
	case origin != nil:
		return origin.Data.TotalThoughts
	}
	return 0
}

func thoughtNotFound(field, format string, args ...any) *Error {
	e := Errorf(CodeThoughtNotFound, field+": "+format+": %w", append(args, ErrThoughtNotFound)...)
	return e.with("field", field)
}

func chainName(b BranchID) string {
	if b == "" {
		return "the main chain"
	}
	return fmt.Sprintf("the branch %q", b)
}

func clonePtr(p *int) *int {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// truncate cuts s to at most n characters, for event payloads.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// Validate checks the rules that need no session — required fields, number
// ranges, fields that come together — with the same errors AddThought
// returns, so that a caller can refuse a thought before it creates a
// session for it.
func (in ThoughtInput) Validate() error {
	_, err := in.validate()
	return err
}
