package remote

// mergeLinks plans the merge of a session's links ref that went apart
// from the remote's: links only add, so both sides' links are kept (see
// gitstore.Store.MergeLinks) instead of keeping the remote's tip aside.
func (s *sharer) mergeLinks(gp *groupPlan, ref string, local, theirs hash, remote string) (*groupPlan, error) {
	mb, merged, err := s.MergeLinks(local, theirs, remote)
	if err != nil {
		return nil, err
	}
	mb.Updates = []refUpdate{{Name: ref, Old: local, New: merged}}
	gp.b = mb
	gp.updated = []RefChange{{Ref: ref, Session: s.SessionOfRef(ref), Old: local.String(), New: merged.String(), Merged: true}}
	return gp, nil
}
