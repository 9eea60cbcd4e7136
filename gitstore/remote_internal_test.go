package gitstore

import "testing"

func TestValidSharedRef(t *testing.T) {
	for name, want := range map[string]bool{
		"refs/heads/knowledge":                           true,
		"refs/heads/sessions/abc-123/main":               true,
		"refs/heads/sessions/abc-123/branches/redis-way": true,
		"refs/heads/sessions/abc-123":                    false,
		"refs/heads/sessions/../../config/main":          false,
		"refs/heads/sessions/ABC/main":                   false,
		"refs/heads/sessions/abc/branches/x/y":           false,
		"refs/heads/sessions/abc/branches/..":            false,
		"refs/heads/sessions/abc/other":                  false,
		"refs/heads/main":                                false,
		"refs/tags/v1":                                   false,
	} {
		if got := validSharedRef(name); got != want {
			t.Errorf("validSharedRef(%q) = %v, want %v", name, got, want)
		}
	}
}
