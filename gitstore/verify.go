package gitstore

// The surface of verification: Store.Verify (ledger.Store) and
// DamagedRefs. The check itself is gitstore/internal/verify, which reads
// the store through verifySource and the layout through verifyLayout.

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/manifest"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/pack"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/refs"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/repo"
	"github.com/thoughtbox/thoughtbox/gitstore/internal/verify"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// Verify implements ledger.Store. It is the thorough check behind
// `thoughtbox verify`, separate from LoadSession, which reads only what the
// session's current state needs and trusts the object store. Verify:
//
//   - checks that each of the session's refs (its main chain and every
//     refs/heads/sessions/<id>/branches/<b>) points at a commit that exists;
//   - walks every commit reachable from them (all parents) and every tree
//     and blob those commits name, and checks that each object exists,
//     inflates, has the type its referrer says, hashes to its id, and (for
//     commits and trees) parses; each damaged object is named with where it
//     was found: its path and the newest commit found holding it;
//   - checks every commit and tree as `git fsck --strict` does (see
//     gitstore/internal/fsck), so verify never says OK where fsck does not;
//   - checks that every commit belongs to the session (its
//     Thoughtbox-Session trailer) and that the commits named by
//     Thoughtbox-Revises exist;
//   - at each ref's tip, checks the manifest against the chain's thought
//     files: it parses and names the session, every file it lists is in the
//     tree (once), holds a thought whose thoughtNumber is the file's number
//     (and, on a branch, the branch's id), no thought file is left out, and
//     some commit of the chain recorded each listed thought.
//
// A session that has no ref at all is ledger.ErrSessionNotFound; damage is
// reported in the result, never as an error. opts.Full rebuilds and
// hashes every version of every packed object (see ledger.VerifyOptions).
func (s *Store) Verify(ctx context.Context, id string, opts ledger.VerifyOptions) (ledger.IntegrityValidationResult, error) {
	if err := validSessionID(id); err != nil {
		return ledger.IntegrityValidationResult{}, fmt.Errorf("%w: %v", ledger.ErrSessionNotFound, err)
	}
	refs, err := s.be.ListRefs(ctx, s.lay.sessions()+id+"/")
	if err != nil {
		return ledger.IntegrityValidationResult{}, err
	}
	// Only this session's ref files: verify of every session calls this
	// once per session.
	damaged, err := s.damagedRefs(s.lay.sessions() + id + "/")
	if err != nil {
		return ledger.IntegrityValidationResult{}, err
	}
	if len(refs) == 0 && len(damaged[id]) == 0 {
		return ledger.IntegrityValidationResult{}, fmt.Errorf("%w: %s", ledger.ErrSessionNotFound, id)
	}
	v := verify.New(ctx, s.verifySource(), verifyLayout, id, verify.Options{Full: opts.Full})

	// The chains in a stable order: main first, then branches by name.
	chains := make([]verify.Chain, 0, len(refs))
	if tip, ok := refs[s.lay.mainRef(id)]; ok {
		chains = append(chains, verify.Chain{Ref: s.lay.mainRef(id), Tip: tip})
	} else {
		v.Fail("ref %s is missing: the session has branch refs but no main chain", s.lay.mainRef(id))
	}
	var branches []string
	for ref := range refs {
		if b, ok := strings.CutPrefix(ref, s.lay.sessions()+id+"/branches/"); ok {
			branches = append(branches, b)
		}
	}
	sort.Strings(branches)
	for _, b := range branches {
		chains = append(chains, verify.Chain{Ref: s.lay.branchRef(id, b), Branch: b, Tip: refs[s.lay.branchRef(id, b)]})
	}

	for _, p := range damaged[id] {
		v.Fail("%s", p)
	}
	// Reads look objects up in the pack indexes without hashing them
	// whole; verify checks each index's checksum (once per process).
	if be := s.disk; be != nil {
		if err := be.Packs().CheckIndexes(); err != nil {
			v.Fail("%v", err)
		}
	}
	for i := range chains {
		v.CheckTip(&chains[i])
	}
	if err := v.Walk(chains); err != nil {
		return ledger.IntegrityValidationResult{}, err
	}
	for i := range chains {
		if chains[i].TipOK {
			v.CheckChain(&chains[i])
		}
	}
	s.verifyParts(ctx, id, v.Fail)
	found := v.Finish()
	res := ledger.IntegrityValidationResult{
		SessionExists:       len(chains) > 0 && chains[0].Branch == "" && chains[0].TipOK,
		ManifestExists:      found.ManifestExists,
		ManifestValid:       found.ManifestValid,
		MissingThoughtFiles: found.MissingThoughtFiles,
		MissingBranchFiles:  found.MissingBranchFiles,
		Errors:              found.Errors,
	}
	res.Valid = len(res.Errors) == 0 && len(res.MissingThoughtFiles) == 0 && len(res.MissingBranchFiles) == 0 &&
		res.SessionExists && res.ManifestExists && res.ManifestValid
	return res, nil
}

// verifySource is what the verifier reads of the store: its objects and,
// on disk, its packs' entries and what this process's indexer found.
type verifySource struct {
	be   repo.Repo
	disk *repo.FS // nil in memory
}

func (s *Store) verifySource() verify.Source { return verifySource{be: s.be, disk: s.disk} }

func (vs verifySource) ReadObject(ctx context.Context, id hash) (objType, []byte, error) {
	return vs.be.ReadObject(ctx, id)
}

func (vs verifySource) ReadRaw(id hash) (pack.RawEntry, error) {
	if vs.disk == nil {
		return pack.RawEntry{}, errNotFound
	}
	return vs.disk.Packs().ReadRaw(id)
}

func (vs verifySource) Indexed(id hash) (objType, int, bool) {
	if vs.disk == nil {
		return 0, 0, false
	}
	return vs.disk.Indexed(id)
}

// verifyLayout hands the verifier the layout's codecs: the trailers a
// commit carries, the manifest, the thought files and their names.
var verifyLayout = verify.Layout{
	Marks: func(msg string) verify.Marks {
		tr := trailers(msg)
		m := verify.Marks{Session: tr[trailerSession], Branch: tr[trailerBranch]}
		m.Thought, _ = strconv.Atoi(tr[trailerThought])
		if r := tr[trailerRevises]; r != "" {
			sha, _, _ := strings.Cut(r, " ")
			if to, err := object.ParseHash(sha); err == nil {
				m.Revises, m.Revising = to, true
			}
		}
		return m
	},
	Manifest: func(data []byte) (verify.Manifest, error) {
		m, err := manifest.Parse(data)
		if err != nil {
			return verify.Manifest{}, err
		}
		return verify.Manifest{ID: m.ID, ThoughtFiles: m.ThoughtFiles, BranchFiles: m.BranchFiles}, nil
	},
	Thought: func(data []byte) (verify.Thought, error) {
		var td ledger.ThoughtData
		if err := decodeThoughtFile(data, &td); err != nil {
			return verify.Thought{}, err
		}
		t := verify.Thought{Number: td.ThoughtNumber, Branch: td.BranchID, Text: td.Thought}
		if td.Critique != nil {
			t.Critique = td.Critique.Text
		}
		return t, nil
	},
	ThoughtFile: func(name string) (int, bool) {
		if !thoughtFileName.MatchString(name) {
			return 0, false
		}
		return fileNumber(name), true
	},
}

// thoughtFileName is the name of a thought file: its number, %03d.
var thoughtFileName = regexp.MustCompile(`^[0-9]{3,}\.json$`)

// DamagedRefs finds session refs that cannot be read: loose ref files under
// refs/heads/sessions/ that do not hold an object id (a truncated write by
// another program, a hand edit). Listing skips such refs — a session whose
// main ref is damaged disappears from the list — so verify asks here. The
// result maps session ids to one problem per damaged ref.
func (s *Store) DamagedRefs() (map[string][]string, error) { return s.damagedRefs(s.lay.sessions()) }

// damagedRefs is DamagedRefs for the refs under prefix only.
func (s *Store) damagedRefs(prefix string) (map[string][]string, error) {
	be := s.disk
	if be == nil {
		return nil, nil
	}
	bad, err := refs.BadLoose(be.GitDir(), prefix)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for ref, content := range bad {
		id := s.lay.sessionOfRef(ref)
		if id == "" {
			continue
		}
		if len(content) > 60 {
			content = content[:60] + "…"
		}
		out[id] = append(out[id], fmt.Sprintf("ref %s does not hold an object id (it holds %q)", ref, content))
	}
	for _, problems := range out {
		sort.Strings(problems)
	}
	return out, nil
}
