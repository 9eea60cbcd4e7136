//go:build unix

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCampaign runs a tiny campaign over every unit, so the tool cannot
// rot unnoticed: it builds the binary, kills, and checks.
func TestCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("builds thoughtbox and kills it a few times")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cfg := config{
		kills:       7,
		modes:       []string{"cli", "stdio", "http", "push", "pull"},
		transports:  []string{"git", "builtin"},
		seed:        1,
		checkEvery:  1,
		httpClients: 2,
		maxDelay:    300 * time.Millisecond,
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	out, err := os.CreateTemp(t.TempDir(), "progress")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := run(context.Background(), cfg, out)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	sum.print(&b)
	t.Log(b.String())
	if len(sum.units) != 7 {
		t.Errorf("%d units, want 7 (cli, stdio, http, push and pull over two transports)", len(sum.units))
	}
	kills, acked := 0, 0
	for _, u := range sum.units {
		kills += u.kills
		_, a, _, _ := u.totals()
		acked += a
		if u.rounds == 0 {
			t.Errorf("unit %s never ran", u.name)
		}
	}
	if kills < cfg.kills {
		t.Errorf("%d kills, want at least %d", kills, cfg.kills)
	}
	if acked == 0 {
		t.Error("no thought was acknowledged: the campaign checked nothing")
	}
}

// TestCheckTokens: the token check catches a lost, a duplicated, a refused
// yet present and a never-sent thought, and accepts one in flight either
// way.
func TestCheckTokens(t *testing.T) {
	l := newLedger(&tool{}, t.TempDir())
	for _, tok := range []string{"ck-a-1", "ck-a-2", "ck-a-3", "ck-a-4"} {
		l.sent(tok, "S")
	}
	l.ack("ck-a-1")
	l.ack("ck-a-2")
	l.refuse("ck-a-3", "thoughtNumber taken")
	acked := func(tok string) bool { return l.acked[tok] }

	for _, c := range []struct {
		name   string
		counts map[string]int
		want   string // "" for no error
	}{
		{"all there, one in flight kept", map[string]int{"ck-a-1": 1, "ck-a-2": 1, "ck-a-4": 1}, ""},
		{"in flight lost", map[string]int{"ck-a-1": 1, "ck-a-2": 1}, ""},
		{"acknowledged lost", map[string]int{"ck-a-1": 1}, "ck-a-2 lost"},
		{"duplicated", map[string]int{"ck-a-1": 2, "ck-a-2": 1}, "ck-a-1 present 2 times"},
		{"refused but there", map[string]int{"ck-a-1": 1, "ck-a-2": 1, "ck-a-3": 1}, "present although refused"},
		{"never sent", map[string]int{"ck-a-1": 1, "ck-a-2": 1, "ck-b-9": 1}, "never sent"},
	} {
		_, err := l.checkTokens("test", "S", c.counts, acked)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		case c.want != "":
			var ce *checkError
			if !errors.As(err, &ce) || ce.kind != lossFailure {
				t.Errorf("%s: %v is not counted as a loss", c.name, err)
			}
		}
	}
}

// TestCheckRepo: the repository check catches what a kill during a ref
// write in place leaves (an empty ref file), a ref naming an object that
// is not there, and what fsck finds; it passes a sound repository.
func TestCheckRepo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := context.Background()
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	gitRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = append(childEnv(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitRun("init", "-q", work)
	gitRun("-C", work, "commit", "-q", "--allow-empty", "-m", "one")
	repo := filepath.Join(work, ".git")
	if err := checkRepo(ctx, repo); err != nil {
		t.Fatalf("sound repository: %v", err)
	}

	ref := filepath.Join(repo, "refs", "heads", "sessions", "x", "main")
	os.MkdirAll(filepath.Dir(ref), 0o755)
	for _, c := range []struct {
		name, content string
		kind          failureKind
	}{
		{"empty ref", "", refFailure},
		{"torn ref", "4b825dc642cb6eb9a060e54bf8d69288fbee", refFailure},
		{"missing object", strings.Repeat("ab", 20) + "\n", fsckFailure},
	} {
		if err := os.WriteFile(ref, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		err := checkRepo(ctx, repo)
		var ce *checkError
		if !errors.As(err, &ce) {
			t.Errorf("%s: checkRepo said %v, want a failure", c.name, err)
			continue
		}
		// fsck may see a bad ref first; either way it is a failure.
		if ce.kind != c.kind && ce.kind != fsckFailure {
			t.Errorf("%s: failure kind %d, want %d: %v", c.name, ce.kind, c.kind, err)
		}
	}
	// The ref check alone, as fsck passes some of these with a warning.
	if err := os.WriteFile(ref, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkRefs(ctx, repo); err == nil {
		t.Error("checkRefs passed an empty ref file")
	}
	if err := os.WriteFile(ref, []byte(strings.Repeat("cd", 20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkRefs(ctx, repo); err == nil || !strings.Contains(err.Error(), "not in") {
		t.Errorf("checkRefs on a ref naming a missing object: %v", err)
	}
}

// TestTeamCampaign runs the team unit for two rounds: two servers sharing
// sessions through one remote, killed, then settled; both ledgers and the
// remote must end with the same refs, no diverged chain, every
// acknowledged thought in each.
func TestTeamCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("builds thoughtbox and runs two servers through kills")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cfg := config{kills: 4, modes: []string{"team"}, seed: 3, checkEvery: 1, httpClients: 2,
		maxDelay: 300 * time.Millisecond, teamWindow: time.Second, teamCycles: 2}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	out, err := os.CreateTemp(t.TempDir(), "progress")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := run(context.Background(), cfg, out)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	sum.print(&b)
	t.Log(b.String())
	u := sum.units[0]
	if _, acked, _, _ := u.totals(); u.kills < cfg.kills || acked == 0 || u.teamSettles == 0 {
		t.Errorf("team unit: %d kills, %d acknowledged, %d settling passes; want at least %d kills and some of each", u.kills, acked, u.teamSettles, cfg.kills)
	}
}
