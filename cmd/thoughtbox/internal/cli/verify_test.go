package cli

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/internal/testfixture"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/project"
)

// The sessions of the damaged ledgers: two healthy ones around the victim.
const (
	healthyA = "aaaa0000-0000-4000-8000-00000000000a"
	victim   = "bbbb0000-0000-4000-8000-00000000000b"
	healthyC = "cccc0000-0000-4000-8000-00000000000c"
)

// damagedLedger is an on-disk ledger written through the ledger and the
// store, with every object loose (as `git unpack-objects` leaves them), so
// that removing or rewriting one file under objects/ damages exactly one
// object of one session.
type damagedLedger struct {
	t       *testing.T
	dataDir string
	gitDir  string
}

func newDamagedLedger(t *testing.T) *damagedLedger {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed; the corruption tests need it")
	}
	d := &damagedLedger{t: t, dataDir: t.TempDir()}
	d.gitDir = filepath.Join(d.dataDir, "projects", "_default.git")
	clock := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	ids := []string{healthyA, victim, healthyC}
	p := openTestProject(t, d.dataDir, project.Options{
		Now: func() time.Time { clock = clock.Add(time.Second); return clock },
		NewID: func() string {
			id := ids[0]
			ids = ids[1:]
			return id
		},
	})
	l := p.Ledger()
	ctx := context.Background()
	who := ledger.Author{Name: "verify-test"}
	for _, title := range []string{"Healthy A", "The victim", "Healthy C"} {
		s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: title}, who)
		if err != nil {
			t.Fatal(err)
		}
		add := func(in ledger.ThoughtInput) {
			t.Helper()
			in.Thought = fmt.Sprintf("%s (%s)", in.Thought, title) // no blob is shared between sessions
			if _, err := l.AddThought(ctx, s.ID, in, who); err != nil {
				t.Fatal(err)
			}
		}
		add(ledger.ThoughtInput{Thought: "The API got slower", NextThoughtNeeded: true})
		add(ledger.ThoughtInput{Thought: "Suspect the cache", NextThoughtNeeded: true})
		add(ledger.ThoughtInput{Thought: "The cache hit rate fell", NextThoughtNeeded: true, BranchID: "cache", BranchFromThought: intp(2)})
		add(ledger.ThoughtInput{Thought: "Not the cache after all", NextThoughtNeeded: true, BranchID: "cache", BranchFromThought: intp(2)})
		add(ledger.ThoughtInput{Thought: "Suspect the database instead", NextThoughtNeeded: true, IsRevision: true, RevisesThought: intp(2)})
		add(ledger.ThoughtInput{Thought: "It is the database", NextThoughtNeeded: false})
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	d.unpack()
	d.git("fsck", "--strict", "--no-dangling")
	return d
}

func intp(n int) *int { return &n }

// openTestProject opens the default project of dataDir as the CLI does
// (through project, with no environment), so that tests write ledgers
// with the settings the commands under test will read them with.
func openTestProject(t *testing.T, dataDir string, opts project.Options) *project.Project {
	t.Helper()
	cfg, err := config.Resolve(config.Flags{DataDir: dataDir}, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	p, err := project.Open(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// unpack turns every pack into loose objects.
func (d *damagedLedger) unpack() {
	packDir := filepath.Join(d.gitDir, "objects", "pack")
	packs, err := filepath.Glob(filepath.Join(packDir, "*.pack"))
	if err != nil || len(packs) == 0 {
		d.t.Fatalf("no packs to unpack (%v)", err)
	}
	aside := d.t.TempDir()
	for _, p := range packs {
		moved := filepath.Join(aside, filepath.Base(p))
		if err := os.Rename(p, moved); err != nil {
			d.t.Fatal(err)
		}
		base := strings.TrimSuffix(p, ".pack")
		for _, ext := range []string{".idx", ".rev", ".keep"} {
			os.Remove(base + ext)
		}
		f, err := os.Open(moved)
		if err != nil {
			d.t.Fatal(err)
		}
		cmd := exec.Command("git", "--git-dir", d.gitDir, "unpack-objects", "-q")
		cmd.Stdin = f
		if out, err := cmd.CombinedOutput(); err != nil {
			d.t.Fatalf("git unpack-objects: %v\n%s", err, out)
		}
		f.Close()
	}
	os.RemoveAll(filepath.Join(d.gitDir, "thoughtbox", "links"))
}

// git runs a git command on the repository and returns its trimmed output.
func (d *damagedLedger) git(args ...string) string {
	d.t.Helper()
	return d.gitEnv(nil, "", args...)
}

func (d *damagedLedger) gitEnv(env []string, stdin string, args ...string) string {
	d.t.Helper()
	cmd := exec.Command("git", append([]string{"--git-dir", d.gitDir}, args...)...)
	cmd.Env = testfixture.GitEnv(env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		d.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// objectPath is the loose file of an object.
func (d *damagedLedger) objectPath(id string) string {
	return filepath.Join(d.gitDir, "objects", id[:2], id[2:])
}

// folder is the path of the victim's session folder inside its trees.
func (d *damagedLedger) folder() string {
	return "sessions/2026-11/" + victim
}

// commitTree makes a commit on top of the victim's main chain whose tree is
// the tip's with files replaced (path -> content), and moves the ref to it.
func (d *damagedLedger) commitTree(files map[string]string, message string) string {
	ref := "refs/heads/sessions/" + victim + "/main"
	index := []string{"GIT_INDEX_FILE=" + filepath.Join(d.t.TempDir(), "index")}
	d.gitEnv(index, "", "read-tree", ref)
	for path, content := range files {
		blob := d.gitEnv(nil, content, "hash-object", "-w", "--stdin")
		d.gitEnv(index, "", "update-index", "--add", "--cacheinfo", "100644,"+blob+","+path)
	}
	tree := d.gitEnv(index, "", "write-tree")
	c := d.gitEnv(nil, message+"\n\nThoughtbox-Session: "+victim+"\n", "commit-tree", tree, "-p", ref)
	d.git("update-ref", ref, c)
	return c
}

// writeLoose writes content as the loose object file of id, compressed as
// git does, whatever id's real content is.
func (d *damagedLedger) writeLoose(id, typ string, content []byte) {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	fmt.Fprintf(w, "%s %d\x00", typ, len(content))
	w.Write(content)
	w.Close()
	d.overwrite(id, z.Bytes())
}

func (d *damagedLedger) run(args ...string) (int, string, string) {
	d.t.Helper()
	return run(d.t, map[string]string{"THOUGHTBOX_DATA_DIR": d.dataDir, "HOME": "/nonexistent"}, args...)
}

// TestVerifyDamage damages one session of an on-disk ledger in each of the
// ways verify must catch — a missing object, a corrupt object, a broken
// manifest, a ref that points at nothing — and checks through the CLI that
// verify names the session and what is wrong and exits 1, while the other
// sessions still list, show, export and verify.
func TestVerifyDamage(t *testing.T) {
	mainRef := "refs/heads/sessions/" + victim + "/main"
	branchRef := "refs/heads/sessions/" + victim + "/branches/cache"
	const nowhere = "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name string
		// damage damages the victim and returns what verify must say
		// about it, each a line or part of one.
		damage func(d *damagedLedger) []string
	}{
		{
			name: "missing tree of an old commit",
			damage: func(d *damagedLedger) []string {
				// Only a walk of the whole history reads this tree.
				c := d.git("rev-parse", mainRef+"~3")
				tree := d.git("rev-parse", c+"^{tree}")
				d.remove(tree)
				return []string{"- missing object " + tree + ": the root tree of commit " + c + "; it does not exist"}
			},
		},
		{
			name: "missing blob on a branch",
			damage: func(d *damagedLedger) []string {
				c := d.git("rev-parse", branchRef)
				path := d.folder() + "/branches/cache/004.json"
				blob := d.git("rev-parse", c+":"+path)
				d.remove(blob)
				return []string{
					"- missing file 004.json of branch cache",
					"- missing object " + blob + ": the blob " + path + " in commit " + c + "; it does not exist",
				}
			},
		},
		{
			name: "blob whose content does not hash to its id",
			damage: func(d *damagedLedger) []string {
				// A valid zlib stream of a well-formed thought file, at
				// the place of another one: a load reads it as is.
				c := d.git("rev-parse", mainRef)
				path := d.folder() + "/002.json"
				blob := d.git("rev-parse", c+":"+path)
				forged := []byte(`{"thought": "forged", "thoughtNumber": 2, "totalThoughts": 2, "nextThoughtNeeded": true, "timestamp": "2026-11-22T09:00:10Z"}` + "\n")
				d.writeLoose(blob, "blob", forged)
				return []string{"- corrupt object " + blob + ": the blob " + path + " in commit " + c + "; its content hashes to " +
					d.gitEnv(nil, string(forged), "hash-object", "--stdin")}
			},
		},
		{
			name: "commit that does not inflate",
			damage: func(d *damagedLedger) []string {
				child := d.git("rev-parse", mainRef)
				c := d.git("rev-parse", mainRef+"~1")
				d.overwrite(c, []byte("this is not zlib"))
				return []string{"- corrupt object " + c + ": the parent of commit " + child + "; it does not inflate or parse: "}
			},
		},
		{
			name: "manifest that does not parse",
			damage: func(d *damagedLedger) []string {
				c := d.commitTree(map[string]string{d.folder() + "/manifest.json": "{ not json"}, "Edit the manifest by hand")
				return []string{"- main chain (commit " + c + "): " + d.folder() + "/manifest.json is not a valid manifest: manifest.json: invalid character"}
			},
		},
		{
			name: "manifest listing an absent file",
			damage: func(d *damagedLedger) []string {
				m := d.git("cat-file", "blob", mainRef+":"+d.folder()+"/manifest.json")
				m = strings.Replace(m, `"004.json"`, `"004.json", "009.json"`, 1)
				d.commitTree(map[string]string{d.folder() + "/manifest.json": m + "\n"}, "Edit the manifest by hand")
				return []string{"- missing thought file 009.json"}
			},
		},
		{
			name: "manifest leaving a thought file out",
			damage: func(d *damagedLedger) []string {
				m := d.git("cat-file", "blob", mainRef+":"+d.folder()+"/manifest.json")
				m = strings.Replace(m, `"003.json",`, ``, 1)
				c := d.commitTree(map[string]string{d.folder() + "/manifest.json": m + "\n"}, "Edit the manifest by hand")
				return []string{"- main chain (commit " + c + "): " + d.folder() + "/003.json is not listed in the manifest"}
			},
		},
		{
			name: "thought file whose number disagrees",
			damage: func(d *damagedLedger) []string {
				f := d.git("cat-file", "blob", mainRef+":"+d.folder()+"/002.json")
				f = strings.Replace(f, `"thoughtNumber": 2`, `"thoughtNumber": 7`, 1)
				c := d.commitTree(map[string]string{d.folder() + "/002.json": f + "\n"}, "Edit thought 2 by hand")
				return []string{"- main chain (commit " + c + "): " + d.folder() + "/002.json holds thoughtNumber 7, not 2"}
			},
		},
		{
			name: "main ref pointing at nothing",
			damage: func(d *damagedLedger) []string {
				d.writeRef(mainRef, nowhere)
				return []string{"- ref " + mainRef + " points at " + nowhere + ", which does not exist"}
			},
		},
		{
			name: "branch ref pointing at nothing",
			damage: func(d *damagedLedger) []string {
				d.writeRef(branchRef, nowhere)
				return []string{"- ref " + branchRef + " points at " + nowhere + ", which does not exist"}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDamagedLedger(t)
			want := tc.damage(d)

			// verify of every session: the victim is INVALID with each
			// problem, the others OK, and the error names the victim.
			code, stdout, stderr := d.run("verify")
			if code != ExitFailure {
				t.Errorf("verify: exit %d, want %d\n%s%s", code, ExitFailure, stdout, stderr)
			}
			for _, w := range append([]string{"INVALID  " + victim, "OK       " + healthyA + "  Healthy A\n", "OK       " + healthyC + "  Healthy C\n"}, want...) {
				if !strings.Contains(stdout, w) {
					t.Errorf("verify: stdout lacks %q:\n%s", w, stdout)
				}
			}
			if w := "thoughtbox: error: 1 of 3 sessions failed the integrity check: " + victim + "\n"; !strings.Contains(stderr, w) {
				t.Errorf("verify: stderr lacks %q:\n%s", w, stderr)
			}

			// verify of the victim alone, in text and JSON.
			code, stdout, stderr = d.run("verify", victim[:4])
			if code != ExitFailure || !strings.Contains(stdout, "INVALID  "+victim) {
				t.Errorf("verify %s: exit %d\n%s%s", victim[:4], code, stdout, stderr)
			}
			for _, w := range want {
				if !strings.Contains(stdout, w) {
					t.Errorf("verify %s: stdout lacks %q:\n%s", victim[:4], w, stdout)
				}
			}
			code, stdout, stderr = d.run("verify", victim, "--format", "json")
			var out []verifyOutput
			if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != ExitFailure || len(out) != 1 {
				t.Fatalf("verify --format json: exit %d, %v\n%s%s", code, err, stdout, stderr)
			}
			if out[0].SessionID != victim || out[0].Integrity.Valid {
				t.Errorf("verify --format json: %+v, want %s invalid", out[0], victim)
			}
			got := problems(out[0].Integrity)
			for _, w := range want {
				w = strings.TrimPrefix(w, "- ")
				if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, w) }) {
					t.Errorf("verify --format json: no problem says %q: %q", w, got)
				}
			}

			// The victim is still listed, shown and exported as far as it
			// can be read.
			code, listing, stderr := d.run("sessions", "--full-ids")
			if code != ExitOK || !strings.Contains(listing, victim) {
				t.Errorf("sessions: exit %d, want the victim listed\n%s%s", code, listing, stderr)
			}
			code, stdout, stderr = d.run("sessions", "--format", "json")
			var list []ledger.Session
			if err := json.Unmarshal([]byte(stdout), &list); err != nil || code != ExitOK || len(list) != 3 {
				t.Errorf("sessions --format json: exit %d, %v, %d sessions\n%s%s", code, err, len(list), stdout, stderr)
			}
			for _, cmd := range []string{"show", "export"} {
				if code, stdout, stderr = d.run(cmd, victim); code != ExitOK {
					t.Errorf("%s %s: exit %d\n%s%s", cmd, victim, code, stdout, stderr)
				}
			}

			// The other sessions are untouched.
			for _, s := range []struct{ id, title string }{{healthyA, "Healthy A"}, {healthyC, "Healthy C"}} {
				line := regexp.MustCompile(`(?m)^` + s.id + `  ` + s.title + `\s+6\s+1\s+2026-11-22T09:`)
				if !line.MatchString(listing) {
					t.Errorf("sessions: no line %s:\n%s", line, listing)
				}
				checks := []struct {
					args []string
					want string
				}{
					{[]string{"verify", s.id}, "OK       " + s.id + "  " + s.title + "\n"},
					{[]string{"show", s.id}, "4  It is the database (" + s.title + ")  [done]\n"},
					{[]string{"export", s.id}, `"thoughtCount": 6,`},
					{[]string{"export", s.id, "--format", "markdown"}, "It is the database (" + s.title + ")"},
				}
				for _, c := range checks {
					code, stdout, stderr := d.run(c.args...)
					if code != ExitOK || stderr != "" || !strings.Contains(stdout, c.want) {
						t.Errorf("%q: exit %d, stderr %q, want stdout with %q:\n%s", c.args, code, stderr, c.want, stdout)
					}
				}
			}
		})
	}
}

func (d *damagedLedger) remove(id string) {
	d.t.Helper()
	if err := os.Remove(d.objectPath(id)); err != nil {
		d.t.Fatal(err)
	}
}

func (d *damagedLedger) overwrite(id string, data []byte) {
	d.t.Helper()
	path := d.objectPath(id)
	os.Chmod(path, 0o644)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// writeRef writes a ref file by hand: git update-ref refuses an object that
// does not exist.
func (d *damagedLedger) writeRef(ref, value string) {
	d.t.Helper()
	if err := os.WriteFile(filepath.Join(d.gitDir, filepath.FromSlash(ref)), []byte(value+"\n"), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

// TestVerifyUnreadableRef damages the victim's main ref file itself (as a
// truncated write by another program would): listing no longer shows the
// session, but verify still finds it, names it and the ref, and fails.
func TestVerifyUnreadableRef(t *testing.T) {
	d := newDamagedLedger(t)
	mainRef := "refs/heads/sessions/" + victim + "/main"
	d.writeRef(mainRef, "not an object id")
	want := "ref " + mainRef + " does not hold an object id"
	code, stdout, stderr := d.run("verify")
	if code != ExitFailure || !strings.Contains(stdout, "INVALID  "+victim) || !strings.Contains(stdout, want) {
		t.Errorf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "OK       "+healthyA) || !strings.Contains(stdout, "OK       "+healthyC) {
		t.Errorf("verify: the healthy sessions are not OK:\n%s", stdout)
	}
	code, stdout, stderr = d.run("verify", victim)
	if code != ExitFailure || !strings.Contains(stdout, want) {
		t.Errorf("verify %s: exit %d\n%s%s", victim, code, stdout, stderr)
	}
	for _, id := range []string{healthyA, healthyC} {
		if code, stdout, stderr := d.run("show", id); code != ExitOK {
			t.Errorf("show %s: exit %d\n%s%s", id, code, stdout, stderr)
		}
	}
}
