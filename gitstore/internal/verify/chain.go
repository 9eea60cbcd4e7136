package verify

// A chain's tip holds the session's folder, its manifest and its thought
// files; the checks here hold them to each other and to the chain's
// commits, after the walk has read every object.

import (
	"fmt"

	"github.com/thoughtbox/thoughtbox/gitstore/internal/object"
)

// CheckChain checks a chain's tip, after the walk: its session folder, its
// manifest, and the thought files the manifest lists, against each other
// and against the chain's commits.
func (v *Check) CheckChain(c *Chain) {
	isMain := c.Branch == ""
	at := fmt.Sprintf("%s (commit %s)", c.Label(), c.Tip)
	commitData, ok := v.read(c.Tip, typeCommit, func() string { return "the tip of " + c.Ref })
	if !ok {
		return
	}
	pc, err := object.ParseCommit(commitData)
	if err != nil {
		return // reported by the walk
	}
	root, ok := v.readTreeAs(pc.Tree, "the root tree of commit "+c.Tip.String())
	if !ok {
		return
	}
	folderPath, folder, ok := v.sessionFolder(root, c.Tip)
	if !ok {
		return
	}
	if folder == nil {
		v.Fail("%s: the commit's tree has no folder sessions/[<partition>/]%s", at, v.id)
		return
	}
	m, ok := v.chainManifest(c, at, folderPath, folder)
	if !ok {
		return
	}

	// The thought files: the main chain's in the folder, and on a branch's
	// ref also the branch's in branches/<b>.
	numbers := v.chainNumbers(c)
	v.checkFiles(c, at, folderPath, folder, m.ThoughtFiles, "", numbers)
	if !isMain {
		dir := &object.Tree{}
		dirPath := folderPath + "/branches/" + c.Branch
		if be, ok := folder.Get("branches"); ok && be.Dir {
			if bt, ok := v.readTreeAs(be.ID, "the tree "+folderPath+"/branches in commit "+c.Tip.String()); ok {
				if e, ok := bt.Get(c.Branch); ok && e.Dir {
					if dir, ok = v.readTreeAs(e.ID, "the tree "+dirPath+" in commit "+c.Tip.String()); !ok {
						return
					}
				}
			}
		}
		v.checkFiles(c, at, dirPath, dir, m.BranchFiles[c.Branch], c.Branch, numbers)
	}
}

// readTreeAs reads and parses a tree, what naming it in a report. A tree
// that does not parse is not reported here: the walk reports it.
func (v *Check) readTreeAs(id hash, what string) (*object.Tree, bool) {
	data, ok := v.read(id, typeTree, func() string { return what })
	if !ok {
		return nil, false
	}
	t, err := object.ParseTree(data)
	if err != nil {
		return nil, false // reported by the walk
	}
	return t, true
}

// sessionFolder finds the session's folder in a tip's root tree:
// sessions/<id> or sessions/<partition>/<id>. folder is nil when there is
// none; ok is false when a tree on the way could not be read (and was
// reported), which ends the chain's check.
func (v *Check) sessionFolder(root *object.Tree, tip hash) (folderPath string, folder *object.Tree, ok bool) {
	folderPath = "sessions"
	if e, ok := root.Get("sessions"); ok && e.Dir {
		sessions, ok := v.readTreeAs(e.ID, "the tree sessions in commit "+tip.String())
		if !ok {
			return folderPath, nil, false
		}
		if fe, ok := sessions.Get(v.id); ok && fe.Dir {
			folderPath += "/" + v.id
			if folder, ok = v.readTreeAs(fe.ID, "the tree "+folderPath+" in commit "+tip.String()); !ok {
				return folderPath, nil, false
			}
		} else {
			for _, pe := range sessions.Entries {
				if !pe.Dir {
					continue
				}
				part, ok := v.readTreeAs(pe.ID, "the tree sessions/"+pe.Name+" in commit "+tip.String())
				if !ok {
					continue
				}
				if fe, ok := part.Get(v.id); ok && fe.Dir {
					folderPath += "/" + pe.Name + "/" + v.id
					if folder, ok = v.readTreeAs(fe.ID, "the tree "+folderPath+" in commit "+tip.String()); !ok {
						return folderPath, nil, false
					}
					break
				}
			}
		}
	}
	return folderPath, folder, true
}

// chainManifest reads and checks the manifest in a chain's session
// folder; on the main chain it records in the result whether the manifest
// exists and is valid. ok is false when it is missing or not valid (and
// reported).
func (v *Check) chainManifest(c *Chain, at, folderPath string, folder *object.Tree) (Manifest, bool) {
	isMain := c.Branch == ""
	me, ok := folder.Get("manifest.json")
	if !ok || me.Dir {
		v.Fail("%s: %s/manifest.json is missing", at, folderPath)
		if isMain {
			v.res.ManifestExists = false
		}
		return Manifest{}, false
	}
	if isMain {
		v.res.ManifestExists = true
	}
	mdata, ok := v.read(me.ID, typeBlob, func() string { return fmt.Sprintf("the blob %s/manifest.json in commit %s", folderPath, c.Tip) })
	if !ok {
		return Manifest{}, false
	}
	m, err := v.lay.Manifest(mdata)
	if err == nil && m.ID != v.id {
		err = fmt.Errorf("manifest.json names session %q", m.ID)
	}
	if err != nil {
		v.Fail("%s: %s/manifest.json is not a valid manifest: %v", at, folderPath, err)
		return Manifest{}, false
	}
	if isMain {
		v.res.ManifestValid = true
	}
	return m, true
}

// checkFiles checks the thought files a manifest lists for one folder
// (branch "" is the main chain's folder) against the folder's entries.
func (v *Check) checkFiles(c *Chain, at, dirPath string, dir *object.Tree, names []string, branch string, numbers map[string]map[int]bool) {
	chain := "the main chain"
	if branch != "" {
		chain = "branch " + branch
	}
	missing := func(name string) {
		switch {
		case c.Branch == "":
			v.res.MissingThoughtFiles = append(v.res.MissingThoughtFiles, name)
		case branch != "":
			if v.res.MissingBranchFiles == nil {
				v.res.MissingBranchFiles = map[string][]string{}
			}
			v.res.MissingBranchFiles[branch] = append(v.res.MissingBranchFiles[branch], name)
		default:
			v.Fail("%s: the manifest lists %s/%s, which is not in the tree", at, dirPath, name)
		}
	}
	listed := map[string]bool{}
	for _, name := range names {
		if listed[name] {
			v.Fail("%s: the manifest lists %s of %s twice", at, name, chain)
			continue
		}
		listed[name] = true
		n, ok := v.lay.ThoughtFile(name)
		if !ok {
			v.Fail("%s: the manifest lists %q for %s, which is not a thought file name", at, name, chain)
			continue
		}
		e, ok := dir.Get(name)
		if !ok || e.Dir {
			missing(name)
			continue
		}
		if numbers != nil && !numbers[branch][n] {
			v.Fail("%s: no commit of %s records thought %d (%s): none has the trailer Thoughtbox-Thought: %d", at, chain, n, name, n)
		}
		key := e.ID.String() + " " + dirPath + "/" + name
		if v.checkedFiles[key] {
			continue
		}
		v.checkedFiles[key] = true
		data, ok := v.read(e.ID, typeBlob, func() string { return fmt.Sprintf("the blob %s/%s in commit %s", dirPath, name, c.Tip) })
		if !ok {
			if v.status[e.ID] == problemMissing { // a corrupt file is reported as such
				missing(name)
			}
			continue
		}
		td, err := v.lay.Thought(data)
		if err != nil {
			v.Fail("%s: %s/%s does not parse: %v", at, dirPath, name, err)
			continue
		}
		if td.Number != n {
			v.Fail("%s: %s/%s holds thoughtNumber %d, not %d", at, dirPath, name, td.Number, n)
		}
		if td.Branch != branch {
			v.Fail("%s: %s/%s holds branchId %q, but the file is in the folder of %s", at, dirPath, name, td.Branch, chain)
		}
		if v.maxText > 0 {
			if n := len(td.Text); n > v.maxText {
				v.Fail("%s: the thought in %s/%s is %d bytes: more than the limit of %d (THOUGHTBOX_MAX_THOUGHT_BYTES)", at, dirPath, name, n, v.maxText)
			}
			if len(td.Critique) > v.maxText {
				v.Fail("%s: the critique in %s/%s is %d bytes: more than the limit of %d (THOUGHTBOX_MAX_THOUGHT_BYTES)", at, dirPath, name, len(td.Critique), v.maxText)
			}
		}
	}
	for _, e := range dir.Entries {
		if !e.Dir && e.Name != "manifest.json" && !listed[e.Name] {
			v.Fail("%s: %s/%s is not listed in the manifest", at, dirPath, e.Name)
		}
	}
}

// chainNumbers returns, by branch ("" for the main chain), the thought
// numbers that the commits on a ref's first-parent line recorded; nil when
// the line is broken by a damaged commit or passes through a commit of
// no (or another) session, both already reported once by the walk: the
// thoughts a rewritten commit replaced, and the intact ones below it, are
// not reported again one by one as missing.
func (v *Check) chainNumbers(c *Chain) map[string]map[int]bool {
	out := map[string]map[int]bool{}
	seen := map[hash]bool{}
	for cur := c.Tip; cur != zeroHash && !seen[cur]; {
		seen[cur] = true
		info, ok := v.commits[cur]
		if !ok {
			return nil
		}
		if info.session != v.id {
			if info.parent == zeroHash {
				break // the root: the session began on a commit of its own kind
			}
			return nil
		}
		if info.thought > 0 {
			if out[info.branch] == nil {
				out[info.branch] = map[int]bool{}
			}
			out[info.branch][info.thought] = true
		}
		cur = info.parent
	}
	return out
}
