package remote_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/gitstore/remote/remotetest"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestThreeClonesShareOneRemote has three ledgers push to one remote and
// pull from it, over each kind of server a team might use: a bare
// repository by path, git daemon (git://) and smart HTTP (git http-backend
// behind net/http/cgi, with a token). Afterwards every clone has every
// session, the knowledge zones are merged, and the git CLI, cloning the
// remote, sees each thought exactly once.
func TestThreeClonesShareOneRemote(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("the git CLI is not installed; this test needs it for the servers")
	}
	for _, kind := range []string{"path", "daemon", "http"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			bare := filepath.Join(t.TempDir(), "team.git")
			gitRun(t, "", "init", "--bare", "-q", bare)
			var url string
			o := remote.TransferOptions{}
			switch kind {
			case "path":
				url = bare
			case "daemon":
				url = startGitDaemon(t, filepath.Dir(bare)) + "/team.git"
			case "http":
				gitRun(t, bare, "config", "http.receivepack", "true")
				url = startHTTPBackend(t, filepath.Dir(bare), "s3cret") + "/team.git"
				o.Token = "s3cret"
				// The wrong token is refused, and said so.
				c := remotetest.New(t, "intruder")
				_, err := remote.Pull(context.Background(), c.Store, url, remote.TransferOptions{Token: "wrong"})
				if !errors.Is(err, remote.ErrCredentials) || !strings.Contains(err.Error(), "THOUGHTBOX_GIT_TOKEN") {
					t.Fatalf("pull with a wrong token: %v", err)
				}
			}
			cliURL := url
			if kind == "http" {
				cliURL = strings.Replace(url, "http://", "http://agent:s3cret@", 1)
			}
			shareThroughOneRemote(t, url, cliURL, o)
			gitRun(t, bare, "fsck", "--strict", "--no-dangling")
		})
	}
}

func shareThroughOneRemote(t *testing.T, url, cliURL string, o remote.TransferOptions) {
	var clones []*remotetest.Clone
	var all []string
	want := map[string][]string{}
	for i, name := range []string{"ada", "bo", "cy"} {
		c := remotetest.New(t, name)
		if _, err := remote.AddRemote(c.Store, "origin", url); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 2; j++ {
			id := c.Start(fmt.Sprintf("%s's question %d", name, j))
			for k := 1; k <= 3; k++ {
				c.Think(id, fmt.Sprintf("%s thinks %d.%d", name, j, k))
			}
			if j == 1 {
				c.Branch(id, "other-way", 2, name+" tries another way")
			}
			all = append(all, id)
			want[id] = c.Thoughts(id)
		}
		kw := ledger.KnowledgeWrite{Entry: ledger.KnowledgeEntry{Kind: ledger.KindPattern, ID: "pattern-of-" + name,
			Title: name + "'s pattern", Description: "learned by " + name, Content: "Do it the " + name + " way.",
			CreatedAt: time.Now(), UpdatedAt: time.Now()}, Author: ledger.Author{Name: name}, When: time.Now()}
		if _, err := c.Store.WriteKnowledge(context.Background(), kw); err != nil {
			t.Fatal(err)
		}
		clones = append(clones, c)
		// Each pulls what the earlier ones pushed, then pushes its own.
		if i > 0 {
			c.Pull("origin", o)
		}
		if res := c.Push("origin", o); len(res.Rejected) != 0 {
			t.Fatalf("%s's push: %+v", name, res.Rejected)
		}
	}
	slices.Sort(all)
	for _, c := range clones {
		res := c.Pull("origin", o)
		if len(res.Diverged) != 0 {
			t.Fatalf("%s: divergence where none was: %+v", c.Name, res.Diverged)
		}
		if got := c.Sessions(); !slices.Equal(got, all) {
			t.Fatalf("%s has sessions %q, want %q", c.Name, got, all)
		}
		for id, thoughts := range want {
			if got := c.Thoughts(id); !slices.Equal(got, thoughts) {
				t.Fatalf("%s: session %s has %q, want %q", c.Name, id, got, thoughts)
			}
		}
		patterns, err := c.Store.ListKnowledge(context.Background(), ledger.KindPattern)
		if err != nil {
			t.Fatal(err)
		}
		if len(patterns) != 3 {
			t.Fatalf("%s has %d patterns after the merges, want 3: %+v", c.Name, len(patterns), patterns)
		}
	}
	// The last clone's pull merged the zone; its push makes that shared.
	clones[2].Push("origin", o)

	// Plain git: clone the remote and count every thought commit once.
	dir := filepath.Join(t.TempDir(), "checkout")
	gitRun(t, "", "clone", "-q", "--mirror", cliURL, dir)
	log := gitRun(t, dir, "log", "--all", "--format=%s")
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		counts[line]++
	}
	for _, thoughts := range want {
		for _, th := range thoughts {
			_, text, _ := strings.Cut(th, ": ")
			n := 0
			for subject, c := range counts {
				if strings.HasSuffix(subject, ": "+text) {
					n += c
				}
			}
			if n != 1 {
				t.Errorf("git log --all shows %q %d times, want once", text, n)
			}
		}
	}
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	if dir != "" {
		cmd.Dir = dir
	}
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// startGitDaemon serves base over git:// on a loopback port and returns the
// URL of base.
func startGitDaemon(t *testing.T, base string) string {
	t.Helper()
	port := freePort(t)
	// git-daemon itself, not `git daemon`: the git wrapper runs it as a
	// child that killing the wrapper would leave behind, listening.
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Skipf("git --exec-path: %v", err)
	}
	daemon := filepath.Join(strings.TrimSpace(string(execPath)), "git-daemon")
	cmd := exec.Command(daemon, "--reuseaddr", "--export-all", "--enable=receive-pack",
		"--listen=127.0.0.1", "--port="+strconv.Itoa(port), "--base-path="+base, base)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Skipf("git daemon does not start here: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go func() { // drain, so the daemon never blocks on a full pipe
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
		}
	}()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("git daemon did not listen on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "git://" + addr
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startHTTPBackend serves base over smart HTTP with git http-backend,
// asking for the token as a basic-auth password.
func startHTTPBackend(t *testing.T, base, token string) string {
	t.Helper()
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git-http-backend is not installed: %v", err)
	}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + base, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pass, ok := r.BasicAuth(); !ok || pass != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="team"`)
			http.Error(w, "token required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
