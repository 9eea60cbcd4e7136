package remote

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/thoughtbox/thoughtbox/sharing"
)

// PeekRemotes lists the remotes named in the repository's Git config.
func PeekRemotes(gitDir string) []string {
	var out []string
	for _, r := range PeekConfig(gitDir) {
		out = append(out, r.Name)
	}
	return out
}

// PeekConfig reads the remotes and their URLs from the repository's
// Git config (the url of each [remote "name"] section), sorted by name.
func PeekConfig(gitDir string) []sharing.Remote {
	f, err := os.Open(filepath.Join(gitDir, "config"))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []sharing.Remote
	var cur *sharing.Remote
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			cur = nil
			if rest, ok := strings.CutPrefix(line, `[remote "`); ok {
				if name, ok := strings.CutSuffix(rest, `"]`); ok && validRemoteName(name) == nil {
					out = append(out, sharing.Remote{Name: name})
					cur = &out[len(out)-1]
				}
			}
			continue
		}
		if key, value, ok := strings.Cut(line, "="); ok && cur != nil && strings.TrimSpace(key) == "url" {
			cur.URL = redactURL(strings.TrimSpace(value))
		}
	}
	slices.SortFunc(out, func(a, b sharing.Remote) int { return strings.Compare(a.Name, b.Name) })
	return out
}
