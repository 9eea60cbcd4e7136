package remote

import (
	"strings"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
)

// remoteKnown is what the remote has of what a push sends: everything
// reachable from the remote's tips of the groups the commands move, that
// we have here too (a session's history we fetched or pushed before). A
// session command looks only at its own session's remote refs, found
// through an index built once: a scan of every remote ref per command was
// quadratic when a push moved many sessions that the remote already had.
// Other commands (knowledge, notebooks, main) are few and scan by prefix.
func (s *sharer) remoteKnown(cmds []*packp.Command, remoteRefs map[string]hash) (map[hash]bool, error) {
	bySession := map[string][]hash{}
	for ref, h := range remoteRefs {
		if id := s.SessionOfRef(ref); id != "" {
			bySession[id] = append(bySession[id], h)
		}
	}
	known := map[hash]bool{}
	done := map[string]bool{}
	for _, c := range cmds {
		name := c.Name.String()
		if id := s.SessionOfRef(name); id != "" {
			if done[id] {
				continue
			}
			done[id] = true
			for _, h := range bySession[id] {
				if err := s.MarkAncestors(h, known); err != nil {
					return nil, err
				}
			}
			continue
		}
		for ref, h := range remoteRefs {
			if strings.HasPrefix(ref, name) {
				if err := s.MarkAncestors(h, known); err != nil {
					return nil, err
				}
			}
		}
	}
	return known, nil
}
