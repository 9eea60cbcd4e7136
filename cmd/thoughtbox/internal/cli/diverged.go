package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sharing"
)

// divergedCmd deals with the chains a pull kept because a remote extended
// a session differently (refs/thoughtbox/diverged/<remote>/...): list them,
// read them, forget them, or take their thoughts in as a branch.
type divergedCmd struct {
	List  divergedListCmd  `cmd:"" default:"1" help:"List the chains kept from remotes that are still apart from this ledger's."`
	Show  divergedShowCmd  `cmd:"" help:"Show a session's kept chains: the remote's thoughts this ledger lacks."`
	Drop  divergedDropCmd  `cmd:"" help:"Forget a session's kept chain(s); the remote keeps them, and a later pull brings back one still apart."`
	Adopt divergedAdoptCmd `cmd:"" help:"Record a kept chain's thoughts as a branch of the session (forked where the chains part), then forget the kept chain."`
}

type divergedListCmd struct{}

func (c *divergedListCmd) Run(a *app) error {
	if err := a.needDisk(); err != nil {
		return err
	}
	chains, err := a.proj.Diverged("")
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		if chains == nil {
			chains = []sharing.DivergedChain{}
		}
		return writeJSON(a.env.Stdout, chains)
	}
	if len(chains) == 0 {
		fmt.Fprintln(a.env.Stderr, "no diverged chains: every chain kept from a remote has been caught up with")
		return nil
	}
	for _, d := range chains {
		fmt.Fprintf(a.env.Stdout, "%s  %s  %s  %s\n", sessionOfRef(d.Ref), d.Remote, chainName(d.Ref), plural(len(d.Thoughts), "thought", "thoughts"))
	}
	return nil
}

type divergedShowCmd struct {
	ID string `arg:"" name:"id" help:"Session id or unique prefix."`
}

func (c *divergedShowCmd) Run(a *app) error {
	chains, err := a.keptChains(c.ID, "")
	if err != nil {
		return err
	}
	if a.format == FormatJSON {
		return writeJSON(a.env.Stdout, chains)
	}
	writeDiverged(a.env.Stdout, chains)
	return nil
}

type divergedDropCmd struct {
	ID     string `arg:"" name:"id" help:"Session id or unique prefix."`
	Remote string `placeholder:"NAME" help:"Only the chain kept from this remote (default: every kept chain of the session)."`
}

func (c *divergedDropCmd) Run(a *app) error {
	chains, err := a.keptChains(c.ID, c.Remote)
	if err != nil {
		return err
	}
	for _, d := range chains {
		if err := a.proj.DropDiverged(a.ctx, d.KeptAs); err != nil {
			return err
		}
		fmt.Fprintf(a.env.Stdout, "dropped %s's %s (%s), kept as %s\n", d.Remote, chainName(d.Ref), plural(len(d.Thoughts), "thought", "thoughts"), d.KeptAs)
	}
	return nil
}

type divergedAdoptCmd struct {
	ID     string `arg:"" name:"id" help:"Session id or unique prefix."`
	Remote string `placeholder:"NAME" help:"The remote whose kept chain to adopt (needed when several are kept)."`
	As     string `placeholder:"BRANCH" help:"Name of the new branch (default: <remote>-diverged)."`
}

// Validate checks --as (exit 2).
func (c *divergedAdoptCmd) Validate() error {
	if c.As != "" {
		if _, err := ledger.NewBranchID(c.As); err != nil {
			return fmt.Errorf("--as: %v", err)
		}
	}
	return nil
}

func (c *divergedAdoptCmd) Run(a *app) error {
	chains, err := a.keptChains(c.ID, c.Remote)
	if err != nil {
		return err
	}
	// Only a main chain can be adopted: when a remote's kept chains are a
	// main chain and branches, the main chain is the one meant.
	if mains := slices.DeleteFunc(slices.Clone(chains), func(d sharing.DivergedChain) bool { return !strings.HasSuffix(d.Ref, "/main") }); len(mains) > 0 {
		chains = mains
	}
	if len(chains) > 1 {
		f := &failure{msg: fmt.Sprintf("session %s has %d kept chains", short8(sessionOfRef(chains[0].Ref)), len(chains)),
			hints: []string{"choose one with --remote:"}}
		for _, d := range chains {
			f.lines = append(f.lines, fmt.Sprintf("--remote %s  (%s)", d.Remote, chainName(d.Ref)))
		}
		return f
	}
	d := chains[0]
	if !strings.HasSuffix(d.Ref, "/main") {
		return fmt.Errorf("only a kept main chain can be adopted as a branch; %s is a %s: 'thoughtbox diverged drop' forgets it", d.KeptAs, chainName(d.Ref))
	}
	id := sessionOfRef(d.Ref)
	branch := c.As
	if branch == "" {
		branch = strings.ToLower(d.Remote) + "-diverged"
	}
	if _, err := ledger.NewBranchID(branch); err != nil {
		return fmt.Errorf("branch name %q (from the remote's name; choose one with --as): %v", branch, err)
	}
	since, thoughts, err := a.proj.DivergedThoughts(id, d.KeptAs)
	if err != nil {
		return err
	}
	if since < 1 {
		return fmt.Errorf("%s shares no thought with this ledger's main chain: a branch must fork from one; 'thoughtbox diverged drop' forgets it", d.KeptAs)
	}
	for i, td := range thoughts {
		in := ledger.ThoughtInput{Thought: td.Thought, NextThoughtNeeded: td.NextThoughtNeeded, BranchID: branch}
		if i == 0 {
			from := since
			in.BranchFromThought = &from
		}
		if _, err := a.ledger.AddThought(a.ctx, id, in, a.author()); err != nil {
			return fmt.Errorf("adopting thought %d of %s as branch %s: %w", td.ThoughtNumber, d.KeptAs, branch, err)
		}
	}
	if err := a.proj.DropDiverged(a.ctx, d.KeptAs); err != nil {
		return err
	}
	fmt.Fprintf(a.env.Stdout, "adopted %s from %s as branch %s (from thought %d) of session %s\n",
		plural(len(thoughts), "thought", "thoughts"), d.Remote, branch, since, short8(id))
	return nil
}

// keptChains resolves a session and returns its kept chains, of one remote
// if given; none is an error naming what there is.
func (a *app) keptChains(prefix, remote string) ([]sharing.DivergedChain, error) {
	if err := a.needDisk(); err != nil {
		return nil, err
	}
	id, err := a.resolve(prefix)
	if err != nil {
		return nil, err
	}
	all, err := a.proj.Diverged(id)
	if err != nil {
		return nil, err
	}
	var out []sharing.DivergedChain
	for _, d := range all {
		if remote == "" || d.Remote == remote {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		what := "no diverged chain"
		if remote != "" {
			what += " from remote " + remote
		}
		return nil, &failure{msg: fmt.Sprintf("session %s has %s", short8(id), what), hints: []string{"'thoughtbox diverged list' shows every kept chain"}}
	}
	return out, nil
}

func chainName(ref string) string {
	if _, b, ok := strings.Cut(ref, "/branches/"); ok {
		return "branch " + b
	}
	return "main chain"
}

// sessionOfRef is the session id in refs/heads/sessions/<id>/...
func sessionOfRef(ref string) string {
	rest, _ := strings.CutPrefix(ref, "refs/heads/sessions/")
	id, _, _ := strings.Cut(rest, "/")
	return id
}

func short8(id string) string { return id[:min(8, len(id))] }
