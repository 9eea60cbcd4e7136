package config

import "testing"

// TestDataDirWithDriveLetter: --data-dir takes a drive-letter path with
// either slash, and the repository lands under it.
func TestDataDirWithDriveLetter(t *testing.T) {
	for in, want := range map[string]string{
		`C:\Users\ada\thoughtbox`: `C:\Users\ada\thoughtbox`,
		`C:/Users/ada/thoughtbox`: `C:\Users\ada\thoughtbox`,
		`\\server\share\ledgers`:  `\\server\share\ledgers`,
	} {
		c, err := Resolve(Flags{DataDir: in, Project: "p"}, envOf(map[string]string{EnvStorage: "memory"}))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if c.DataDir != want || c.RepoPath() != want+`\projects\p.git` {
			t.Errorf("%s: DataDir %s, RepoPath %s; want %s", in, c.DataDir, c.RepoPath(), want)
		}
	}
}
