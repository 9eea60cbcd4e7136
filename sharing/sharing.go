// Package sharing holds the vocabulary of sharing a ledger through Git
// remotes that the storage engine produces and its readers print: the
// remotes of a project, the remote chains a pull kept aside, and what a
// push and a pull did (results.go). It is a leaf (the standard library
// only, no go-git), so that the CLI can name these types without reaching
// the engine that makes them: gitstore and gitstore/remote fill them in,
// project hands them on, the CLI encodes them (their JSON tags are the
// CLI's --format json output).
package sharing

// Remote is a named Git remote of a project.
type Remote struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// DivergedChain is a remote's chain of a session, kept after a pull found
// it extended differently here.
type DivergedChain struct {
	Remote string `json:"remote"`
	Ref    string `json:"ref"`
	KeptAs string `json:"keptAs"`
	Tip    string `json:"tip"`
	// Since is the last commit both chains share (empty if none).
	Since string `json:"since,omitempty"`
	// Thoughts are the remote's commits after Since, oldest first, as
	// their subject lines ("Thought 6: …").
	Thoughts []string `json:"thoughts"`
}
