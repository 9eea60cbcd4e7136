package sharing

// What a push and a pull did, ref by ref: gitstore/remote fills these in,
// project adds the branches it records, and the CLI prints them (their
// JSON tags are `push --format json` and `pull --format json`).

// RefChange is a ref a transfer moved.
type RefChange struct {
	Ref     string `json:"ref"`
	Session string `json:"session,omitempty"`
	Old     string `json:"old,omitempty"` // empty: the ref was created
	New     string `json:"new"`
	// Merged marks a merge commit made to join two histories (the
	// knowledge zone's).
	Merged bool `json:"merged,omitempty"`
}

// RejectReason says why a push left a ref alone. Its values are spelled as
// the JSON output has always spelled them.
type RejectReason string

const (
	// RejectBehind: the remote has thoughts we lack; pull.
	RejectBehind RejectReason = "behind"
	// RejectDiverged: both sides added different thoughts.
	RejectDiverged RejectReason = "diverged"
	// RejectAhead: the remote's tip is not here, so it is ahead or
	// diverged; a pull tells which.
	RejectAhead RejectReason = "ahead"
	// RejectRefused: the remote said no; the Message says why.
	RejectRefused RejectReason = "refused"
	// RejectHeld: another ref of the same session was rejected, and a
	// session moves whole.
	RejectHeld RejectReason = "held"
)

// Rejection is a ref a push left alone, and why.
type Rejection struct {
	Ref     string       `json:"ref"`
	Session string       `json:"session,omitempty"`
	Reason  RejectReason `json:"reason"`
	Message string       `json:"message"`
}

// PushResult says what a push did.
type PushResult struct {
	Remote   string      `json:"remote,omitempty"`
	URL      string      `json:"url"`
	Updated  []RefChange `json:"updated"`
	UpToDate int         `json:"upToDate"`
	Rejected []Rejection `json:"rejected"`
	Objects  int         `json:"objects"`
	Bytes    int64       `json:"bytes"`
	// Withheld lists the sessions of the transfer's Exclude the push
	// left out, sorted.
	Withheld []string `json:"withheld,omitempty"`
}

// Divergence is a ref whose chain differs here and on a remote.
type Divergence struct {
	Session string `json:"session,omitempty"`
	Ref     string `json:"ref"`
	// KeptAs is the ref holding the remote's chain.
	KeptAs string `json:"keptAs"`
	Local  string `json:"local"`
	Remote string `json:"remote"`
	// Why says why the pull could not make this ledger's chain a branch
	// of the session (see Branched), when it tried.
	Why string `json:"why,omitempty"`
}

// Branched is a chain of this ledger that a pull found extended
// differently on the remote: its thoughts after the last thought both
// sides share were recorded as a new branch of the session, forked there,
// and the chain itself took the remote's tip. Push sends the branch like
// any other, so both sides end with the same refs.
type Branched struct {
	Session string `json:"session"`
	// Ref is the chain that was apart; it now holds the remote's tip.
	Ref string `json:"ref"`
	// Branch is the new branch: the slug of the author of its first
	// thought and the first 7 hex digits of the first commit only this
	// side had, e.g. alice-3f2a1c9.
	Branch      string `json:"branch"`
	FromThought int    `json:"fromThought"`
	Thoughts    int    `json:"thoughts"`
}

// PullResult says what a pull did.
type PullResult struct {
	Remote   string       `json:"remote,omitempty"`
	URL      string       `json:"url"`
	Created  []RefChange  `json:"created"`
	Updated  []RefChange  `json:"updated"`
	UpToDate int          `json:"upToDate"`
	Diverged []Divergence `json:"diverged"`
	// Branched are this ledger's chains that diverged from the remote's
	// and were recorded as branches (by the project, which has the ledger
	// that records them); Diverged keeps only what could not be.
	Branched []Branched `json:"branched"`
	// Quarantined are incoming chains that failed the checks of what a
	// pull brings in (gitstore/remote, incoming.go); none of them moved a
	// live ref.
	Quarantined []Quarantined `json:"quarantined"`
	// Deleted are sessions the remote has that were deleted here; they
	// were left alone.
	Deleted []string `json:"deleted,omitempty"`
	Objects int      `json:"objects"`
	Bytes   int64    `json:"bytes"`
}

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
