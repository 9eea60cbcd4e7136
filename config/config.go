// Package config resolves where and how Thoughtbox keeps its ledger — the
// data directory, the project, the storage backend and the session
// partitioning — from command-line flags, the environment and the data
// directory's config.json. Package project opens what a configuration
// names.
//
// The CLI and the MCP server share it, so that both read the same
// settings the same way:
//
//	cfg, err := config.Resolve(config.Flags{}, os.LookupEnv)
//	if err != nil { … }
//	p, err := project.Open(cfg, project.Options{})
//	if err != nil { … }
//	defer p.Close()
//
// Precedence, highest first: flags, environment variables, config.json,
// built-in defaults. config.json is written once, on the first run against
// a data directory with file storage, and never rewritten.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// DefaultPushHookBudget is how long the pre-push hook may add to a git
// push when THOUGHTBOX_PUSH_HOOK_BUDGET is not set.
const DefaultPushHookBudget = 2 * time.Second

// DefaultNotebookTimeout is how long a notebook run may take when
// THOUGHTBOX_NOTEBOOK_TIMEOUT is not set.
const DefaultNotebookTimeout = 10 * time.Second

// Defaults.
const (
	DefaultDataDir = "~/.thoughtbox"
	DefaultProject = "_default"
	// DefaultAutoPullInterval is how often a server pulls from
	// THOUGHTBOX_AUTO_PULL unless told otherwise.
	DefaultAutoPullInterval = 30 * time.Second
	// MinAutoPullInterval, the least interval of auto-pull and auto-push,
	// keeps a mistyped one (1ms for 1m) from hammering a team's Git host.
	MinAutoPullInterval = time.Second
)

// FileName is the name of the configuration file in the data directory.
const FileName = "config.json"

// Storage selects the store backend.
type Storage string

// The storage backends.
const (
	// StorageFS keeps each project in a bare Git repository on disk.
	StorageFS Storage = "fs"
	// StorageMemory keeps everything in memory: nothing outlives the
	// process, and nothing is written to the data directory.
	StorageMemory Storage = "memory"
)

// LookupEnv reads an environment variable, as os.LookupEnv does. Tests
// inject a map-backed one.
type LookupEnv func(name string) (string, bool)

// Flags are the values given on the command line; an empty field was not
// given. They win over the environment.
type Flags struct {
	DataDir string
	Project string
}

// Config is a resolved configuration.
type Config struct {
	// DataDir is absolute, with any leading ~ expanded.
	DataDir string
	// Project is the validated project name.
	Project string
	// Storage is the backend to open.
	Storage Storage
	// Partition is the session-folder granularity in force for this run:
	// THOUGHTBOX_PARTITION if set, else the one in config.json.
	Partition ledger.Granularity
	// LockTimeout is THOUGHTBOX_LOCK_TIMEOUT, or 0 for the store's default.
	LockTimeout time.Duration
	// File is config.json as read, or as just created (see FileCreated).
	// With memory storage and no config.json on disk it is a fresh value
	// that is not saved.
	File File
	// FileCreated reports that this run wrote config.json.
	FileCreated bool
	// MaxThoughtBytes is the largest thought accepted, from
	// THOUGHTBOX_MAX_THOUGHT_BYTES or ledger.DefaultMaxThoughtBytes. It
	// bounds the CLI, every MCP connection and what a pull brings in alike.
	MaxThoughtBytes int
	// AutoCreateSession is THOUGHTBOX_AUTO_CREATE_SESSION (default true).
	AutoCreateSession bool
	// AutoPullInterval is THOUGHTBOX_AUTO_PULL_INTERVAL, or
	// DefaultAutoPullInterval; it matters only with THOUGHTBOX_AUTO_PULL.
	AutoPullInterval time.Duration
	// AutoPushInterval is THOUGHTBOX_AUTO_PUSH_INTERVAL, or 0: open
	// sessions are not pushed, closed ones are.
	AutoPushInterval time.Duration
	// NotebookTimeout is THOUGHTBOX_NOTEBOOK_TIMEOUT, or
	// DefaultNotebookTimeout.
	NotebookTimeout time.Duration
	// Code, when set, is the code repository whose own object store
	// keeps the project's ledger (see InCode); nil for a standalone
	// project under the data directory.
	Code *CodeRepo

	lookup LookupEnv
}

// CodeRepo is a worktree of a code repository that keeps the ledger.
type CodeRepo struct {
	// Worktree is the worktree's top folder.
	Worktree string
	// GitDir is the worktree's own git folder (per-worktree state).
	GitDir string
	// CommonDir is the folder all worktrees share: the ledger's objects,
	// refs and engine files live there.
	CommonDir string
}

// InCode is the same configuration with the ledger kept in the code
// repository cr instead of the data directory.
func (c *Config) InCode(cr CodeRepo) *Config {
	cp := *c
	cp.Code = &cr
	return &cp
}

// Resolve works out the configuration from flags and the environment, and
// reads config.json from the data directory, creating it if absent (with
// file storage only). An invalid flag or environment value is a
// *SettingError; a config.json that cannot be read or parsed is another
// error naming the file.
func Resolve(flags Flags, env LookupEnv) (*Config, error) {
	return resolve(flags, env, true)
}

// Inspect is Resolve without side effects: config.json is read if it is
// there, never created (FileExists tells). Commands that only report, such
// as info and projects, use it so that asking never changes anything.
func Inspect(flags Flags, env LookupEnv) (*Config, error) {
	return resolve(flags, env, false)
}

func resolve(flags Flags, env LookupEnv, create bool) (*Config, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	c := &Config{lookup: env}

	dataDir, source := pick(flags.DataDir, "--data-dir", env, EnvDataDir, DefaultDataDir)
	dir, err := expandDir(dataDir, env)
	if err != nil {
		return nil, &SettingError{Name: source, Value: dataDir, Reason: err.Error()}
	}
	c.DataDir = dir

	project, source := pick(flags.Project, "--project", env, EnvProject, DefaultProject)
	if err := ValidateProject(project); err != nil {
		return nil, &SettingError{Name: source, Value: project, Reason: err.Error()}
	}
	c.Project = project

	storage, _ := pick("", "", env, EnvStorage, string(StorageFS))
	switch s := Storage(storage); s {
	case StorageFS, StorageMemory:
		c.Storage = s
	default:
		return nil, &SettingError{Name: EnvStorage, Value: storage, Reason: "expected fs or memory"}
	}

	c.MaxThoughtBytes = ledger.DefaultMaxThoughtBytes
	if v, ok := env(EnvMaxThoughtBytes); ok && v != "" {
		n, err := parseSize(v)
		if err != nil {
			return nil, &SettingError{Name: EnvMaxThoughtBytes, Value: v, Reason: err.Error()}
		}
		c.MaxThoughtBytes = n
	}

	c.AutoCreateSession = true
	if v, ok := env(EnvAutoCreateSession); ok && strings.TrimSpace(v) != "" {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "1", "true", "yes", "on":
		case "0", "false", "no", "off":
			c.AutoCreateSession = false
		default:
			return nil, &SettingError{Name: EnvAutoCreateSession, Value: v, Reason: "expected true or false"}
		}
	}

	// The event stream's settings are checked here too, so that a bad value
	// is refused before config.json is written.
	if err := checkEvents(func(n string) string { v, _ := env(n); return v }); err != nil {
		return nil, err
	}

	partition, partitionSet := "", false
	if v, ok := env(EnvPartition); ok && v != "" {
		g, err := parseGranularity(v)
		if err != nil {
			return nil, &SettingError{Name: EnvPartition, Value: v, Reason: err.Error()}
		}
		partition, partitionSet = string(g), true
	}

	if v, ok := env(EnvLockTimeout); ok && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, &SettingError{Name: EnvLockTimeout, Value: v, Reason: "expected a positive duration such as 10s or 500ms"}
		}
		c.LockTimeout = d
	}

	c.AutoPullInterval = DefaultAutoPullInterval
	if v, ok := env(EnvAutoPullInterval); ok && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < MinAutoPullInterval {
			return nil, &SettingError{Name: EnvAutoPullInterval, Value: v, Reason: "expected a duration of at least 1s such as 30s or 5m"}
		}
		c.AutoPullInterval = d
	}
	if v, ok := env(EnvAutoPushInterval); ok && v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < MinAutoPullInterval {
			return nil, &SettingError{Name: EnvAutoPushInterval, Value: v, Reason: "expected a duration of at least 1s such as 10s or 1m"}
		}
		c.AutoPushInterval = d
	}
	c.NotebookTimeout = DefaultNotebookTimeout
	if v, ok := env(EnvNotebookTimeout); ok && strings.TrimSpace(v) != "" {
		d, err := parseTimeout(strings.TrimSpace(v))
		if err != nil || d <= 0 || d > time.Hour {
			return nil, &SettingError{Name: EnvNotebookTimeout, Value: v, Reason: "expected a positive duration up to 1h such as 10s or 1500ms, or a number of seconds"}
		}
		c.NotebookTimeout = d
	}

	file, created, err := loadOrCreate(c.DataDir, create && c.Storage == StorageFS, time.Now)
	if err != nil {
		return nil, err
	}
	c.File, c.FileCreated = file, created
	c.Partition = file.SessionPartitionGranularity
	if partitionSet {
		c.Partition = ledger.Granularity(partition)
	}
	return c, nil
}

// Getenv returns an environment variable through the lookup Resolve was
// given ("" if unset), so that later settings (ports, tokens, the agent's
// name) come from the same environment as the rest.
func (c *Config) Getenv(name string) string {
	if c.lookup == nil {
		return ""
	}
	v, _ := c.lookup(name)
	return v
}

// RepoPath is the bare Git repository of the project:
// $DATA_DIR/projects/<project>.git, or, for a ledger kept in a code
// repository, that repository's common git folder.
func (c *Config) RepoPath() string {
	if c.Code != nil {
		return c.Code.CommonDir
	}
	return filepath.Join(c.DataDir, "projects", c.Project+".git")
}

// NotebookWorkDir is where the project's notebooks keep their work
// folders (package.json, node_modules), one per notebook:
// $DATA_DIR/notebooks/<project>. With memory storage it is "", so that
// nothing is written to the data directory (a temporary folder is used).
func (c *Config) NotebookWorkDir() string {
	if c.Storage == StorageMemory {
		return ""
	}
	if c.Code != nil {
		return filepath.Join(c.Code.CommonDir, "thoughtbox", "notebooks")
	}
	return filepath.Join(c.DataDir, "notebooks", c.Project)
}

// parseTimeout reads a Go duration ("30s") or, as the notebook package
// accepts too, a plain number of seconds ("30", "1.5").
func parseTimeout(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) {
		return 0, fmt.Errorf("not a duration: %q", s)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// maxSettableBytes caps THOUGHTBOX_MAX_THOUGHT_BYTES: a larger thought
// would not fit the MCP transports' own message limits anyway.
const maxSettableBytes = 1 << 30

// parseSize reads a byte count: digits, optionally followed by K, KiB, M or
// MiB (binary units).
func parseSize(s string) (int, error) {
	const want = "expected a number of bytes from 1 to 1G, optionally with a K or M suffix (e.g. 1048576 or 2M)"
	num, mult := strings.TrimSpace(s), 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.mult
			break
		}
	}
	if num == "" || len(num) > 10 {
		return 0, errors.New(want)
	}
	n := 0
	for _, r := range num {
		if r < '0' || r > '9' {
			return 0, errors.New(want)
		}
		n = n*10 + int(r-'0')
	}
	if n < 1 || n > maxSettableBytes/mult {
		return 0, errors.New(want)
	}
	return n * mult, nil
}

// SettingError reports a flag or environment variable with a value that is
// not allowed. Name is the flag ("--project") or variable
// ("THOUGHTBOX_STORAGE") the value came from.
type SettingError struct {
	Name   string
	Value  string
	Reason string
}

func (e *SettingError) Error() string {
	return fmt.Sprintf("%s=%q: %s", e.Name, e.Value, e.Reason)
}

// pick returns the flag value if given, else the environment variable if
// set and non-empty, else the default, along with the name of its source
// ("default" for the default). An empty variable counts as unset.
func pick(flag, flagName string, env LookupEnv, envName, def string) (value, source string) {
	if flag != "" {
		return flag, flagName
	}
	if v, ok := env(envName); ok && v != "" {
		return v, envName
	}
	return def, "default"
}

// expandDir expands a leading ~ (from HOME, else the user's home) and makes
// the path absolute.
func expandDir(dir string, env LookupEnv) (string, error) {
	if dir == "~" || strings.HasPrefix(dir, "~/") || strings.HasPrefix(dir, "~"+string(filepath.Separator)) {
		home, ok := env("HOME")
		if !ok || home == "" {
			h, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("cannot expand ~: %v", err)
			}
			home = h
		}
		dir = filepath.Join(home, dir[1:])
	} else if strings.HasPrefix(dir, "~") {
		return "", errors.New("only ~ and ~/… are expanded; give the path in full")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return abs, nil
}

// maxProjectLength keeps <project>.git well below file-name limits.
const maxProjectLength = 100

// ValidateProject checks that name is usable as a file name on every
// platform: 1 to 100 of ASCII letters, digits, '_', '-' and '.', not
// starting with '.' or '-'.
func ValidateProject(name string) error {
	if name == "" {
		return errors.New("must not be empty")
	}
	if len(name) > maxProjectLength {
		return fmt.Errorf("must be at most %d characters, got %d", maxProjectLength, len(name))
	}
	if name[0] == '.' || name[0] == '-' {
		return errors.New("must not start with '.' or '-'")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("may hold only letters, digits, '_', '-' and '.', got %q", c)
		}
	}
	return nil
}

// parseGranularity is ledger.ParseGranularity without its default for
// "", and with a message that lists the choices.
func parseGranularity(s string) (ledger.Granularity, error) {
	if s == "" {
		return "", errors.New("expected monthly, weekly, daily or none")
	}
	g, err := ledger.ParseGranularity(s)
	if err != nil {
		return "", errors.New("expected monthly, weekly, daily or none")
	}
	return g, nil
}

// ForProject is the same configuration for another project (navigate and
// bind_root move an MCP connection between projects).
func (c *Config) ForProject(name string) (*Config, error) {
	if err := ValidateProject(name); err != nil {
		return nil, err
	}
	cp := *c
	cp.Project = name
	cp.Code = nil // a named project is one of the data directory
	return &cp, nil
}

// Projects lists the projects of a data directory: the names of the
// repositories under projects/, sorted. A directory that cannot be read
// has none.
func Projects(dataDir string) []string {
	ents, err := os.ReadDir(filepath.Join(dataDir, "projects"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".git"); ok && e.IsDir() && ValidateProject(name) == nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Exists reports whether the project's repository is on disk already.
// With memory storage nothing is, so it is always false.
func (c *Config) Exists() bool {
	if c.Storage == StorageMemory {
		return false
	}
	fi, err := os.Stat(c.RepoPath())
	return err == nil && fi.IsDir()
}

// Projects names the projects whose repositories are in the data
// directory, sorted.
func (c *Config) Projects() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(c.DataDir, "projects"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".git"); ok && e.IsDir() && ValidateProject(name) == nil {
			names = append(names, name)
		}
	}
	return names, nil
}

// ParseSize reads a byte count as THOUGHTBOX_MAX_THOUGHT_BYTES takes it:
// digits, optionally followed by K, KiB, M, MiB, G or GiB (binary units),
// from 1 byte to 1 GiB.
func ParseSize(s string) (int, error) { return parseSize(s) }
