package remote_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/thoughtbox/thoughtbox/gitstore/remote"
	"github.com/thoughtbox/thoughtbox/gitstore/remote/remotetest"
)

// TestSSHRemote pushes and pulls over ssh, to a loopback ssh server that
// runs git-upload-pack and git-receive-pack, first with a key file, then
// with the key held by an ssh agent. The server's host key is checked
// against a known_hosts file.
func TestSSHRemote(t *testing.T) {
	for _, prog := range []string{"git", "git-upload-pack", "git-receive-pack"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("%s is not installed; the ssh server of this test runs it", prog)
		}
	}
	_, userKey, _ := ed25519.GenerateKey(rand.Reader)
	userSigner, err := ssh.NewSignerFromKey(userKey)
	if err != nil {
		t.Fatal(err)
	}
	addr, hostKey := startSSHServer(t, userSigner.PublicKey())

	dir := t.TempDir()
	known := filepath.Join(dir, "known_hosts")
	host := fmt.Sprintf("[127.0.0.1]:%d", addr.Port)
	if err := os.WriteFile(known, []byte(host+" "+string(ssh.MarshalAuthorizedKey(hostKey))), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_KNOWN_HOSTS", known)
	block, err := ssh.MarshalPrivateKey(userKey, "")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}

	bare := filepath.Join(dir, "team.git")
	gitRun(t, "", "init", "--bare", "-q", bare)
	url := fmt.Sprintf("ssh://git@127.0.0.1:%d%s", addr.Port, bare)

	a := remotetest.New(t, "a")
	id := a.Start("Over ssh")
	a.Think(id, "sent through an ssh tunnel")
	if res := a.Push(url, remote.TransferOptions{SSHKeyFile: keyFile}); len(res.Updated) != 2 {
		t.Fatalf("push over ssh with a key file: %+v", res)
	}

	// The same key in an agent, found through SSH_AUTH_SOCK.
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: userKey}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("no unix socket for an ssh agent: %v", err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { agent.ServeAgent(keyring, c); c.Close() }()
		}
	}()
	t.Setenv("SSH_AUTH_SOCK", sock)
	b := remotetest.New(t, "b")
	if res := b.Pull(url, remote.TransferOptions{}); len(res.Created) != 1 {
		t.Fatalf("pull over ssh with the agent: %+v", res)
	}
	if !slices.Equal(b.Thoughts(id), a.Thoughts(id)) {
		t.Fatalf("b has %q", b.Thoughts(id))
	}

	// A host key that is not the known one is refused.
	if err := os.WriteFile(known, []byte(host+" "+string(ssh.MarshalAuthorizedKey(userSigner.PublicKey()))), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Pull(t.Context(), b.Store, url, remote.TransferOptions{SSHKeyFile: keyFile}); err == nil || !strings.Contains(err.Error(), "key") {
		t.Fatalf("pull from a host with another key: %v", err)
	}
}

// startSSHServer serves git over ssh on a loopback port for one user key.
func startSSHServer(t *testing.T, allowed ssh.PublicKey) (*net.TCPAddr, ssh.PublicKey) {
	t.Helper()
	_, hostPriv, _ := ed25519.GenerateKey(rand.Reader)
	hostSigner, err := ssh.NewSignerFromKey(hostPriv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		if bytes.Equal(key.Marshal(), allowed.Marshal()) {
			return nil, nil
		}
		return nil, fmt.Errorf("unknown key")
	}}
	cfg.AddHostKey(hostSigner)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveSSH(c, cfg)
		}
	}()
	return ln.Addr().(*net.TCPAddr), hostSigner.PublicKey()
}

func serveSSH(c net.Conn, cfg *ssh.ServerConfig) {
	defer c.Close()
	_, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, chReqs, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for req := range chReqs {
				if req.Type != "exec" {
					req.Reply(req.Type == "env", nil)
					continue
				}
				var payload struct{ Command string }
				ssh.Unmarshal(req.Payload, &payload)
				prog, arg, _ := strings.Cut(payload.Command, " ")
				if prog != "git-upload-pack" && prog != "git-receive-pack" {
					req.Reply(false, nil)
					return
				}
				req.Reply(true, nil)
				cmd := exec.Command(prog, strings.Trim(arg, "'"))
				cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
				status := 0
				if err := cmd.Run(); err != nil {
					status = 1
				}
				var st [4]byte
				binary.BigEndian.PutUint32(st[:], uint32(status))
				ch.SendRequest("exit-status", false, st[:])
				io.Copy(io.Discard, ch)
				return
			}
		}()
	}
}
