package remote

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/sharing"
)

// What a pull brings in is checked before any ref of ours moves: a chain
// from a remote is someone else's writing, and once it is a live session
// ref, search, verify and add all trust it. A session whose incoming chain
// fails a check is kept under refs/thoughtbox/quarantine/<remote>/
// instead, where nothing reads it as a session, and the pull reports it.

// DefaultMaxThoughtBytes is the largest thought text (and critique text)
// a pull accepts when TransferOptions.MaxThoughtBytes is 0: the ledger's
// own default, so that what one ledger accepts from an agent another
// accepts from a pull.
const DefaultMaxThoughtBytes = ledger.DefaultMaxThoughtBytes

func (o TransferOptions) maxThoughtBytes() int {
	if o.MaxThoughtBytes > 0 {
		return o.MaxThoughtBytes
	}
	return DefaultMaxThoughtBytes
}

// quarantineIncoming checks every group (a session, or the knowledge zone)
// whose refs a pull would move, and takes each that fails out of groups:
// its remote tips are reported in res and returned by the names that keep
// them, under refs/thoughtbox/quarantine/<remote>/, for the pull to keep
// in the quarantine repository (see gitstore.Staging).
//
// The groups are checked side by side, one per core: each check only
// reads objects and refs, and a clone of thousands of sessions spent most
// of its time here. What they found is then acted on in the groups' order,
// so the result and the quarantine refs do not depend on which finished
// first.
func (s *sharer) quarantineIncoming(ctx context.Context, remote string, groups map[string][]string, remoteRefs map[string]hash, maxBytes int, res *sharing.PullResult) (map[string]hash, error) {
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	found := make([]groupCheck, len(names))
	err := checkEach(ctx, len(names), func(ctx context.Context, i int) error {
		var err error
		found[i], err = s.checkGroup(ctx, names[i], groups[names[i]], remoteRefs, maxBytes)
		return err
	})
	if err != nil {
		return nil, err
	}
	kept := map[string]hash{}
	for i, g := range names {
		moving, problems := found[i].moving, found[i].problems
		if len(problems) == 0 {
			continue
		}
		id := s.SessionOfRef(groups[g][0])
		delete(groups, g)
		refs := make([]string, 0, len(moving))
		for ref := range moving {
			refs = append(refs, ref)
		}
		sort.Slice(refs, func(i, j int) bool { return gitstore.RefOrder(refs[i]) < gitstore.RefOrder(refs[j]) })
		for _, ref := range refs {
			keep := gitstore.QuarantinePrefix + remote + "/" + strings.TrimPrefix(ref, s.SharedRefRoot())
			kept[keep] = moving[ref]
			res.Quarantined = append(res.Quarantined, sharing.Quarantined{Session: id, Notebook: s.NotebookOfRef(ref), Ref: ref, KeptAs: keep,
				Tip: moving[ref].String(), Problems: problems})
		}
	}
	return kept, nil
}

// groupCheck is what the check of one group found: the refs a pull would
// move (ref -> remote tip) and the problems of what they would move to.
type groupCheck struct {
	moving   map[string]hash
	problems []string
}

// checkGroup checks the refs of one group (a session, a notebook, the
// knowledge zone) that a pull would move: those the remote has ahead of
// ours or that we lack.
func (s *sharer) checkGroup(ctx context.Context, g string, refs []string, remoteRefs map[string]hash, maxBytes int) (groupCheck, error) {
	moving := map[string]hash{}
	for _, ref := range refs {
		l, err := s.ReadRef(ref)
		if err != nil {
			return groupCheck{}, err
		}
		r := remoteRefs[ref]
		if l == r {
			continue
		}
		if l != zeroHash {
			ahead, err := s.IsAncestor(r, l)
			if err != nil {
				return groupCheck{}, err
			}
			if ahead {
				continue
			}
		}
		moving[ref] = r
	}
	if len(moving) == 0 {
		return groupCheck{}, nil
	}
	// The group's kind checks it (see gitstore/kinds.go).
	problems, err := s.CheckIncoming(ctx, refs[0], moving, maxBytes)
	if err != nil {
		return groupCheck{}, fmt.Errorf("check %s: %w", g, err)
	}
	return groupCheck{moving: moving, problems: problems}, nil
}

// checkEach runs check(i) for i in [0, n) on as many goroutines as there
// are cores, and returns the error of the lowest i that failed. The i are
// handed out in order and, after a failure at k, no i above k is begun,
// while every i below k is still run, even one a goroutine was handed
// just before another reported k: the error is the one a check in order
// would have returned, whichever goroutine was first.
func checkEach(ctx context.Context, n int, check func(ctx context.Context, i int) error) error {
	errs := make([]error, n)
	var next atomic.Int64
	var lowest atomic.Int64 // the lowest i that failed so far, n while none has
	lowest.Store(int64(n))
	var wg sync.WaitGroup
	for w := min(runtime.GOMAXPROCS(0), n); w > 0; w-- {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= lowest.Load() {
					return
				}
				if errs[i] = check(ctx, int(i)); errs[i] != nil {
					for low := lowest.Load(); i < low && !lowest.CompareAndSwap(low, i); low = lowest.Load() {
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
