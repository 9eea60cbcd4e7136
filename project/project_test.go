package project

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func resolve(t *testing.T, vars map[string]string) *config.Config {
	t.Helper()
	cfg, err := config.Resolve(config.Flags{}, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

var author = ledger.Author{Name: "test"}

func TestOpenMemoryWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cfg := resolve(t, map[string]string{config.EnvDataDir: dir, config.EnvStorage: "memory"})
	p, err := Open(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Ledger().StartSession(context.Background(), ledger.CreateSessionParams{Title: "t"}, author); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("memory storage touched the data dir: %v", err)
	}
}

// TestOpenFSReopens: a session written through one opening is there at the
// next, in the project's repository, with the configured partition.
func TestOpenFSReopens(t *testing.T) {
	dir := t.TempDir()
	cfg := resolve(t, map[string]string{config.EnvDataDir: dir, config.EnvProject: "p1", config.EnvPartition: "none"})
	p, err := Open(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sess, err := p.Ledger().StartSession(ctx, ledger.CreateSessionParams{Title: "t"}, author)
	if err != nil {
		t.Fatal(err)
	}
	if sess.PartitionPath != "" {
		t.Errorf("partition none: PartitionPath %q", sess.PartitionPath)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "projects", "p1.git", "HEAD")); err != nil {
		t.Errorf("no repository at the project path: %v", err)
	}
	p = openCfg(t, cfg, Options{})
	list, err := p.Ledger().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != sess.ID {
		t.Errorf("after reopening: %+v, want the one session %s", list, sess.ID)
	}
}

func openCfg(t *testing.T, cfg *config.Config, opts Options) *Project {
	t.Helper()
	p, err := Open(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestOpenCarriesTheThoughtLimit: the ledger refuses what the
// configuration's THOUGHTBOX_MAX_THOUGHT_BYTES refuses.
func TestOpenCarriesTheThoughtLimit(t *testing.T) {
	p := openProject(t, map[string]string{config.EnvStorage: "memory", config.EnvMaxThoughtBytes: "64"}, Options{})
	if got := p.Ledger().MaxThoughtBytes(); got != 64 {
		t.Errorf("the ledger's limit is %d, want 64", got)
	}
	ctx := context.Background()
	s, err := p.Ledger().StartSession(ctx, ledger.CreateSessionParams{Title: "t"}, author)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Ledger().AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: strings.Repeat("x", 65), NextThoughtNeeded: true}, author); err == nil {
		t.Error("a 65-byte thought was accepted under a 64-byte limit")
	}
}

// TestOpenRefusesABadTransport: a sharing setting that cannot work is
// refused when the project opens (auto-push would use it), naming the
// variable, and leaves nothing open.
func TestOpenRefusesABadTransport(t *testing.T) {
	cfg := resolve(t, map[string]string{config.EnvDataDir: t.TempDir(), config.EnvAutoPush: "origin", config.EnvFileTransport: "carrier-pigeon"})
	_, err := Open(cfg, Options{})
	var se *config.SettingError
	if !errors.As(err, &se) || se.Name != config.EnvFileTransport {
		t.Fatalf("Open: %v, want a SettingError naming %s", err, config.EnvFileTransport)
	}
	// The store it had opened was closed: opening again works at once
	// (no flush or log lock is left held).
	cfg2 := resolve(t, map[string]string{config.EnvDataDir: cfg.DataDir})
	openCfg(t, cfg2, Options{})
}

// TestOpenWiresAutoPush: with THOUGHTBOX_AUTO_PUSH, a session that closes
// reaches the remote by the time the project is closed, and the
// caller's event sink still gets every event; with memory storage the
// setting is logged as ignored.
func TestOpenWiresAutoPush(t *testing.T) {
	remote := bareRemote(t)
	var got []ledger.EventType
	sink := sinkFunc(func(e ledger.Event) { got = append(got, e.Type) })
	cfg := resolve(t, map[string]string{config.EnvDataDir: t.TempDir(), config.EnvAutoPush: remote})
	p, err := Open(cfg, Options{Events: sink})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := p.Ledger().StartSession(ctx, ledger.CreateSessionParams{Title: "closing"}, author)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Ledger().AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: "done", NextThoughtNeeded: false}, author); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if n := remoteCount(t, remote, s.ID); n != 2 {
		t.Errorf("the remote has %d commits of the closed session, want 2", n)
	}
	if len(got) == 0 {
		t.Error("the caller's sink got no events behind the auto-pusher")
	}

	var log syncBuffer
	openProject(t, map[string]string{config.EnvStorage: "memory", config.EnvAutoPush: remote}, Options{Logger: log.logger()})
	if !strings.Contains(log.String(), `level=WARN msg="THOUGHTBOX_AUTO_PUSH is ignored`) {
		t.Errorf("memory storage with auto-push logged %q", log.String())
	}
}

type sinkFunc func(ledger.Event)

func (f sinkFunc) Publish(e ledger.Event) { f(e) }

// TestPullForgetsMovedSessions: a session this project had read and that a
// pull moved is read afresh, without a write of ours first.
func TestPullForgetsMovedSessions(t *testing.T) {
	remote := bareRemote(t)
	a, b := newTeamMember(t), newTeamMember(t)
	ctx := context.Background()
	s, err := a.Ledger().StartSession(ctx, ledger.CreateSessionParams{Title: "shared"}, author)
	if err != nil {
		t.Fatal(err)
	}
	a.think(t, s.ID, "one")
	a.push(t, remote)
	if _, err := b.Pull(ctx, remote, nil); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Ledger().View(ctx, s.ID); err != nil || v.Graph.Len() != 1 {
		t.Fatalf("B's view after the first pull: %v", err)
	}
	a.think(t, s.ID, "two")
	a.push(t, remote)
	res, err := b.Pull(ctx, remote, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Updated) == 0 {
		t.Fatalf("the second pull moved nothing: %+v", res)
	}
	if v, err := b.Ledger().View(ctx, s.ID); err != nil || v.Graph.Len() != 2 {
		t.Errorf("B's view after the second pull has %d thoughts (%v), want 2", v.Graph.Len(), err)
	}
}

// TestInspectOpensNothing: Inspect reports a project that is not there
// without creating it, and a written one with its sessions and remotes.
func TestInspectOpensNothing(t *testing.T) {
	dir := t.TempDir()
	cfg := resolve(t, map[string]string{config.EnvDataDir: dir, config.EnvProject: "p"})
	if st := Inspect(cfg); st.Exists || st.Sessions != 0 {
		t.Errorf("Inspect of a project never opened: %+v", st)
	}
	if _, err := os.Stat(cfg.RepoPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Inspect created the repository: %v", err)
	}
	p, err := Open(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Ledger().StartSession(context.Background(), ledger.CreateSessionParams{Title: "t"}, author); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddRemote("origin", filepath.Join(dir, "team.git")); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	st := Inspect(cfg)
	if !st.Exists || st.Sessions != 1 || len(st.Remotes) != 1 || st.Remotes[0].Name != "origin" || st.PendingRecords != 0 {
		t.Errorf("Inspect after a session and a remote: %+v", st)
	}
	if ids := PeekSessionIDs(cfg.RepoPath()); len(ids) != 1 {
		t.Errorf("PeekSessionIDs: %v", ids)
	}
	if names := PeekRemotes(cfg.RepoPath()); len(names) != 1 || names[0] != "origin" {
		t.Errorf("PeekRemotes: %v", names)
	}
}

// TestStartAutoPull: a server's project pulls from THOUGHTBOX_AUTO_PULL
// once started (a second start does nothing), Close stops it, and memory
// storage logs the setting as ignored.
func TestStartAutoPull(t *testing.T) {
	remote := bareRemote(t)
	a := newTeamMember(t)
	ctx := context.Background()
	s, err := a.Ledger().StartSession(ctx, ledger.CreateSessionParams{Title: "from A"}, author)
	if err != nil {
		t.Fatal(err)
	}
	a.push(t, remote)
	b := openProject(t, map[string]string{config.EnvAutoPull: remote}, Options{})
	if err := b.StartAutoPull(); err != nil {
		t.Fatal(err)
	}
	first := b.puller
	if err := b.StartAutoPull(); err != nil || b.puller != first {
		t.Fatalf("a second StartAutoPull: %v, puller replaced %v", err, b.puller != first)
	}
	first.waitPulls(1)
	if list, err := b.Ledger().List(ctx); err != nil || len(list) != 1 || list[0].ID != s.ID {
		t.Errorf("B after its first auto-pull lists %+v (%v), want %s", list, err, s.ID)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.StartAutoPull(); err != nil || b.puller != first {
		t.Errorf("StartAutoPull after Close: %v, started again %v", err, b.puller != first)
	}

	var log syncBuffer
	m := openProject(t, map[string]string{config.EnvStorage: "memory", config.EnvAutoPull: remote}, Options{Logger: log.logger()})
	if err := m.StartAutoPull(); err != nil || m.puller != nil {
		t.Fatalf("memory storage: %v, puller %v", err, m.puller)
	}
	if !strings.Contains(log.String(), `level=WARN msg="THOUGHTBOX_AUTO_PULL is ignored`) {
		t.Errorf("memory storage with auto-pull logged %q", log.String())
	}
}
