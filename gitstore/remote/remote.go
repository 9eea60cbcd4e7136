package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"

	"github.com/thoughtbox/thoughtbox/sharing"
)

// A project shares its ledger through ordinary Git remotes. Remotes are
// kept where git keeps them — [remote "name"] sections of the repository's
// config — so `git remote -v` and `git fetch` in the bare repository agree
// with `thoughtbox remote list`.
//
// What moves: every session's refs (refs/heads/sessions/<id>/...), the
// knowledge zone (refs/heads/knowledge), every notebook's ref
// (refs/heads/notebooks/<id>) and, when the remote has none yet, main with
// its README. Each session owns its refs, so pushes from many
// agents never touch the same ref unless they wrote the same session.

// TransferOptions say how to reach a remote and what to move.
type TransferOptions struct {
	// Progress, when set, receives progress lines (the server's own, and
	// ours for long transfers).
	Progress io.Writer
	// Token authenticates over http(s) (basic auth, the token as the
	// password); User is the user name sent with it ("thoughtbox" if
	// empty). Credentials in the URL are used when Token is empty.
	Token, User string
	// SSHKeyFile is a private key for ssh URLs; without it the ssh agent
	// is asked.
	SSHKeyFile, SSHKeyPassphrase string
	// BuiltinFile serves file URLs and paths with go-git's in-process Git
	// server even when the git programs are installed. Without them it is
	// used anyway.
	BuiltinFile bool
	// Sessions limits a push to these sessions (the knowledge ref and the
	// notebooks go too, unless SessionsOnly); nil pushes everything. A
	// pull given Sessions takes only these sessions' refs.
	Sessions []string
	// SessionsOnly, with Sessions, leaves the knowledge ref and the
	// notebooks out of a push: what moves is every ref under each listed
	// session's folder and nothing else (a code repository's pre-push
	// hook sends the sessions its commits name, no more).
	SessionsOnly bool
	// Since, when set, makes a pull take in only the sessions whose
	// remote main chain's tip was committed at or after it (those it has
	// to fetch anyway; the others' objects are dropped with the staged
	// pack).
	Since time.Time
	// Force lists sessions whose refs on the remote may be replaced even
	// though they are not ancestors of ours (push only).
	Force []string
	// Exclude lists sessions a push never sends, whatever Sessions
	// says (the private sessions of a code repository); the result names
	// those it left out.
	Exclude []string
	// MaxThoughtBytes is the longest thought (and critique) text a pull
	// accepts, in bytes, measured as the ledger measures a thought it is
	// given; 0 means DefaultMaxThoughtBytes (1 MiB). Files are bounded by
	// what such texts can take once encoded (see gitstore.MaxIncomingFileBytes).
	MaxThoughtBytes int
	// BeforeRefsMove, when set, is called once a pull has fetched and
	// checked what it brings and is about to move refs (not when it moves
	// none). A ledger on the store is told then (ledger.Pulling), not for
	// the whole fetch, so that only the short window in which its views
	// lag the refs costs it anything.
	BeforeRefsMove func()
}

var remoteNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func validRemoteName(name string) error {
	if !remoteNameRE.MatchString(name) || strings.Contains(name, "..") || strings.HasSuffix(name, ".lock") {
		return withKind(ErrInvalidRemoteName, fmt.Errorf("remote name %q: expected letters, digits, '.', '_' or '-', starting with a letter or digit", name))
	}
	return nil
}

// remotes lists the project's remotes by name.
func (s *sharer) remotes() ([]sharing.Remote, error) {
	cfg, err := s.Config()
	if err != nil {
		return nil, err
	}
	out := make([]sharing.Remote, 0, len(cfg.Remotes))
	for name, rc := range cfg.Remotes {
		r := sharing.Remote{Name: name}
		if len(rc.URLs) > 0 {
			r.URL = rc.URLs[0]
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// addRemote records a remote. A path is stored as an absolute path, so that
// the remote does not depend on the directory a command ran in.
func (s *sharer) addRemote(name, rawURL string) (sharing.Remote, error) {
	if err := validRemoteName(name); err != nil {
		return sharing.Remote{}, err
	}
	u, err := normalizeURL(rawURL)
	if err != nil {
		return sharing.Remote{}, err
	}
	err = s.EditConfig(func(cfg *gitconfig.Config) error {
		if _, ok := cfg.Remotes[name]; ok {
			return withKind(ErrRemoteExists, fmt.Errorf("remote %q already exists (url %s); remove it first to change it", name, cfg.Remotes[name].URLs[0]))
		}
		cfg.Remotes[name] = &gitconfig.RemoteConfig{Name: name, URLs: []string{u},
			Fetch: []gitconfig.RefSpec{gitconfig.RefSpec("+refs/heads/*:refs/remotes/" + name + "/*")}}
		return nil
	})
	return sharing.Remote{Name: name, URL: u}, err
}

// removeRemote forgets a remote. Chains kept from it after a divergence
// stay (refs/thoughtbox/diverged/<name>/...): they may hold the only local
// copy of someone's thoughts.
func (s *sharer) removeRemote(name string) error {
	return s.EditConfig(func(cfg *gitconfig.Config) error {
		if _, ok := cfg.Remotes[name]; !ok {
			return fmt.Errorf("remote %q: %w", name, ErrNoRemote)
		}
		delete(cfg.Remotes, name)
		if cfg.Raw != nil && cfg.Raw.HasSection("remote") {
			cfg.Raw.Section("remote").RemoveSubsection(name)
		}
		return nil
	})
}

// resolveRemote turns a remote name, or a URL or path given directly, into
// the name to report and the URL to dial.
func (s *sharer) resolveRemote(nameOrURL string) (name, u string, err error) {
	remotes, err := s.remotes()
	if err != nil {
		return "", "", err
	}
	if nameOrURL == "" {
		switch len(remotes) {
		case 0:
			return "", "", fmt.Errorf("the project has no remote: add one with 'thoughtbox remote add origin <url>': %w", ErrNoRemote)
		case 1:
			return remotes[0].Name, remotes[0].URL, nil
		}
		for _, r := range remotes {
			if r.Name == "origin" {
				return r.Name, r.URL, nil
			}
		}
		return "", "", fmt.Errorf("the project has %d remotes and none is called origin: name one: %w", len(remotes), ErrNoRemote)
	}
	for _, r := range remotes {
		if r.Name == nameOrURL {
			return r.Name, r.URL, nil
		}
	}
	if strings.ContainsAny(nameOrURL, "/:\\") {
		u, err := normalizeURL(nameOrURL)
		return "", u, err
	}
	return "", "", fmt.Errorf("remote %q: %w (see 'thoughtbox remote list')", nameOrURL, ErrNoRemote)
}

// normalizeURL checks a remote URL and makes a local path absolute.
func normalizeURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", withKind(ErrInvalidRemoteURL, errors.New("remote url: expected a path or a URL (file://, git://, http(s)://, ssh://, or user@host:path)"))
	}
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		return "", withKind(ErrInvalidRemoteURL, fmt.Errorf("remote url %q: %v", raw, err))
	}
	switch ep.Protocol {
	case "file":
		if strings.HasPrefix(raw, "file://") {
			return raw, nil
		}
		abs, err := filepath.Abs(raw)
		if err != nil {
			return "", err
		}
		return abs, nil
	case "git", "http", "https", "ssh":
		return raw, nil
	}
	return "", withKind(ErrInvalidRemoteURL, fmt.Errorf("remote url %q: protocol %q is not supported: expected a path, file://, git://, http(s):// or ssh://", raw, ep.Protocol))
}

// remoteLink is an open connection to a remote and what it advertised.
type remoteLink struct {
	name    string // "" when a URL or path was given rather than a remote name
	url     string
	builtin bool           // go-git's in-process server (see dial)
	adv     *packp.AdvRefs // never nil; no refs for an empty repository
}

// connect reaches a remote (a name, URL or path) through a session that
// open starts (upload-pack to fetch, receive-pack to push), and reads the
// refs it advertises. The caller closes the session.
func (s *sharer) connect(ctx context.Context, remote string, o TransferOptions,
	open func(transport.Transport, *transport.Endpoint, transport.AuthMethod) (transport.Session, error)) (*remoteLink, transport.Session, error) {
	name, u, err := s.resolveRemote(remote)
	if err != nil {
		return nil, nil, err
	}
	tr, ep, auth, builtin, err := dial(u, o)
	if err != nil {
		return nil, nil, err
	}
	sess, err := open(tr, ep, auth)
	if err != nil {
		return nil, nil, describeDialError(u, err)
	}
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		sess.Close()
		return nil, nil, describeDialError(u, err)
	}
	if adv == nil {
		adv = packp.NewAdvRefs()
	}
	return &remoteLink{name: name, url: u, builtin: builtin, adv: adv}, sess, nil
}

// dial picks the transport and credentials for a URL; builtin says it is
// go-git's in-process server.
func dial(rawURL string, o TransferOptions) (tr transport.Transport, ep *transport.Endpoint, auth transport.AuthMethod, builtin bool, err error) {
	ep, err = transport.NewEndpoint(rawURL)
	if err != nil {
		return nil, nil, nil, false, withKind(ErrInvalidRemoteURL, fmt.Errorf("remote url %q: %v", rawURL, err))
	}
	switch ep.Protocol {
	case "file":
		if o.BuiltinFile || !gitProgramsInstalled() {
			// go-git's own server, in this process: pushing to a path
			// needs no git installation.
			return builtinFile{}, ep, nil, true, nil
		}
	case "http", "https":
		switch {
		case o.Token != "":
			user := o.User
			if user == "" {
				user = "thoughtbox"
			}
			auth = &githttp.BasicAuth{Username: user, Password: o.Token}
		case ep.User != "" || ep.Password != "":
			auth = &githttp.BasicAuth{Username: ep.User, Password: ep.Password}
		}
	case "ssh":
		user := ep.User
		if user == "" {
			user = "git"
		}
		if o.SSHKeyFile != "" {
			keys, err := gitssh.NewPublicKeysFromFile(user, o.SSHKeyFile, o.SSHKeyPassphrase)
			if err != nil {
				return nil, nil, nil, false, fmt.Errorf("ssh key %s: %w", o.SSHKeyFile, err)
			}
			auth = keys
		}
		// Otherwise go-git asks the ssh agent (SSH_AUTH_SOCK).
	}
	c, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, nil, false, fmt.Errorf("remote url %q: %w", rawURL, err)
	}
	return c, ep, auth, false, nil
}

func gitProgramsInstalled() bool {
	_, err1 := exec.LookPath("git-upload-pack")
	_, err2 := exec.LookPath("git-receive-pack")
	return err1 == nil && err2 == nil
}

// describeDialError adds what to do to the usual failures of reaching a
// remote.
func describeDialError(u string, err error) error {
	switch {
	case errors.Is(err, transport.ErrRepositoryNotFound):
		hint := ""
		if ep, perr := transport.NewEndpoint(u); perr == nil && ep.Protocol == "file" {
			hint = fmt.Sprintf(" (create it with 'git init --bare %s')", ep.Path)
		}
		return withKind(ErrNoRepository, fmt.Errorf("no Git repository at %s%s: %w", redactURL(u), hint, err))
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return withKind(ErrCredentials, fmt.Errorf("%s refused our credentials (set THOUGHTBOX_GIT_TOKEN for http(s), THOUGHTBOX_SSH_KEY or an ssh agent for ssh): %w", redactURL(u), err))
	}
	return fmt.Errorf("%s: %w", redactURL(u), err)
}

// redactURL hides a password in a URL before it is printed.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// ValidRemoteName says why name cannot name a remote, or nil if it can; the
// command line checks it before opening anything.
func ValidRemoteName(name string) error { return validRemoteName(name) }

// NormalizeURL checks a remote URL as AddRemote does and makes a local path
// absolute: two spellings of one remote compare equal once normalized.
func NormalizeURL(raw string) (string, error) { return normalizeURL(raw) }
