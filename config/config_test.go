package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/thoughtbox/thoughtbox/ledger"
)

func envOf(m map[string]string) LookupEnv {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestResolveDefaults(t *testing.T) {
	home := t.TempDir()
	c, err := Resolve(Flags{}, envOf(map[string]string{"HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(home, ".thoughtbox")
	if c.DataDir != want || c.Project != DefaultProject || c.Storage != StorageFS || c.Partition != ledger.PartitionMonthly {
		t.Errorf("got data dir %q, project %q, storage %q, partition %q; want %q, _default, fs, monthly",
			c.DataDir, c.Project, c.Storage, c.Partition, want)
	}
	if got := c.RepoPath(); got != filepath.Join(want, "projects", "_default.git") {
		t.Errorf("RepoPath = %q", got)
	}
	if !c.FileCreated {
		t.Error("FileCreated = false on a first run")
	}
}

func TestResolvePrecedence(t *testing.T) {
	dir := t.TempDir()
	env := envOf(map[string]string{
		"HOME":       "/nonexistent",
		EnvDataDir:   filepath.Join(dir, "from-env"),
		EnvProject:   "env-project",
		EnvStorage:   "memory",
		EnvPartition: "daily",
	})
	c, err := Resolve(Flags{DataDir: filepath.Join(dir, "from-flag"), Project: "flag.project"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != filepath.Join(dir, "from-flag") || c.Project != "flag.project" {
		t.Errorf("flags did not win: data dir %q, project %q", c.DataDir, c.Project)
	}
	if c.Storage != StorageMemory || c.Partition != ledger.PartitionDaily {
		t.Errorf("storage %q, partition %q; want memory, daily", c.Storage, c.Partition)
	}

	c, err = Resolve(Flags{}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != filepath.Join(dir, "from-env") || c.Project != "env-project" {
		t.Errorf("environment ignored: data dir %q, project %q", c.DataDir, c.Project)
	}
}

func TestResolveEmptyVariablesAreUnset(t *testing.T) {
	home := t.TempDir()
	c, err := Resolve(Flags{}, envOf(map[string]string{
		"HOME": home, EnvDataDir: "", EnvProject: "", EnvStorage: "", EnvPartition: "",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != filepath.Join(home, ".thoughtbox") || c.Project != DefaultProject || c.Storage != StorageFS {
		t.Errorf("got %q %q %q", c.DataDir, c.Project, c.Storage)
	}
}

func TestResolveTilde(t *testing.T) {
	home := t.TempDir()
	for in, want := range map[string]string{
		"~":           home,
		"~/ledgers/a": filepath.Join(home, "ledgers", "a"),
	} {
		c, err := Resolve(Flags{DataDir: in}, envOf(map[string]string{"HOME": home, EnvStorage: "memory"}))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if c.DataDir != want {
			t.Errorf("%s expanded to %q, want %q", in, c.DataDir, want)
		}
	}
	_, err := Resolve(Flags{DataDir: "~bob/x"}, envOf(map[string]string{"HOME": home}))
	var se *SettingError
	if !errors.As(err, &se) || se.Name != "--data-dir" {
		t.Errorf("~bob: got %v, want a SettingError for --data-dir", err)
	}
}

func TestResolveInvalidSettings(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		flags    Flags
		env      map[string]string
		name     string // SettingError.Name
		contains string
	}{
		{env: map[string]string{EnvStorage: "s3"}, name: EnvStorage, contains: "expected fs or memory"},
		{env: map[string]string{EnvPartition: "hourly"}, name: EnvPartition, contains: "monthly, weekly, daily or none"},
		{env: map[string]string{EnvProject: "../escape"}, name: EnvProject, contains: "must not start with '.'"},
		{flags: Flags{Project: "a/b"}, name: "--project", contains: "letters, digits"},
		{flags: Flags{Project: "-rf"}, name: "--project", contains: "must not start"},
		{flags: Flags{Project: strings.Repeat("p", 101)}, name: "--project", contains: "at most 100"},
		{env: map[string]string{EnvNotebookTimeout: "ten"}, name: EnvNotebookTimeout, contains: "positive duration"},
		{env: map[string]string{EnvNotebookTimeout: "-1s"}, name: EnvNotebookTimeout, contains: "positive duration"},
		{env: map[string]string{EnvNotebookTimeout: "2h"}, name: EnvNotebookTimeout, contains: "up to 1h"},
		{env: map[string]string{EnvNotebookTimeout: "NaN"}, name: EnvNotebookTimeout, contains: "positive duration"},
		{env: map[string]string{EnvEventsEnabled: "maybe"}, name: EnvEventsEnabled, contains: "expected 1, true, yes or on"},
		{env: map[string]string{EnvEventsEnabled: "1", EnvEventsDest: "stdout"}, name: EnvEventsDest, contains: "use stderr or a file path"},
	}
	for _, tt := range tests {
		env := map[string]string{EnvDataDir: dir}
		for k, v := range tt.env {
			env[k] = v
		}
		_, err := Resolve(tt.flags, envOf(env))
		var se *SettingError
		if !errors.As(err, &se) {
			t.Errorf("%v %v: got %v, want *SettingError", tt.flags, tt.env, err)
			continue
		}
		if se.Name != tt.name || !strings.Contains(se.Error(), tt.contains) {
			t.Errorf("%v %v: got %q (name %q), want name %q and %q", tt.flags, tt.env, se, se.Name, tt.name, tt.contains)
		}
	}
}

func TestConfigFileCreatedOnceAndNeverOverwritten(t *testing.T) {
	dir := t.TempDir()
	env := envOf(map[string]string{EnvDataDir: dir})
	c1, err := Resolve(Flags{}, env)
	if err != nil {
		t.Fatal(err)
	}
	if !c1.FileCreated {
		t.Fatal("first run did not create config.json")
	}
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"installId", "dataDir", "disableThoughtLogging", "sessionPartitionGranularity", "createdAt"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("config.json lacks %q: %s", k, data)
		}
	}
	if _, err := uuid.Parse(c1.File.InstallID); err != nil {
		t.Errorf("installId %q is not a UUID", c1.File.InstallID)
	}
	if raw["sessionPartitionGranularity"] != "monthly" || raw["dataDir"] != dir {
		t.Errorf("config.json = %s", data)
	}

	c2, err := Resolve(Flags{}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c2.FileCreated {
		t.Error("second run created config.json again")
	}
	if diff := cmp.Diff(c1.File, c2.File); diff != "" {
		t.Errorf("config changed between runs (-first +second):\n%s", diff)
	}
	again, _ := os.ReadFile(filepath.Join(dir, FileName))
	if string(again) != string(data) {
		t.Errorf("config.json was rewritten:\n%s\nthen\n%s", data, again)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".config-*")); len(m) != 0 {
		t.Errorf("temporary files left behind: %v", m)
	}
}

func TestConfigFilePartitionAndOverride(t *testing.T) {
	dir := t.TempDir()
	write := `{"installId":"x","dataDir":"elsewhere","disableThoughtLogging":true,"sessionPartitionGranularity":"weekly","createdAt":"2026-01-01T00:00:00Z"}`
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(write), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Resolve(Flags{}, envOf(map[string]string{EnvDataDir: dir}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Partition != ledger.PartitionWeekly || !c.File.DisableThoughtLogging || c.File.InstallID != "x" {
		t.Errorf("config.json not honoured: partition %q, file %+v", c.Partition, c.File)
	}
	c, err = Resolve(Flags{}, envOf(map[string]string{EnvDataDir: dir, EnvPartition: "none"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Partition != ledger.PartitionNone || c.File.SessionPartitionGranularity != ledger.PartitionWeekly {
		t.Errorf("THOUGHTBOX_PARTITION=none: partition %q, file %q", c.Partition, c.File.SessionPartitionGranularity)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, FileName)); string(got) != write {
		t.Errorf("config.json was rewritten: %s", got)
	}
}

func TestConfigFileInvalid(t *testing.T) {
	for _, content := range []string{`{`, `{"sessionPartitionGranularity":"yearly"}`} {
		dir := t.TempDir()
		path := filepath.Join(dir, FileName)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Resolve(Flags{}, envOf(map[string]string{EnvDataDir: dir}))
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("config.json %s: got %v, want an error naming %s", content, err, path)
		}
	}
}

func TestGetenv(t *testing.T) {
	c, err := Resolve(Flags{}, envOf(map[string]string{EnvDataDir: t.TempDir(), "THOUGHTBOX_AGENT_NAME": "a1"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Getenv("THOUGHTBOX_AGENT_NAME"); got != "a1" {
		t.Errorf("Getenv = %q", got)
	}
	if got := c.Getenv("UNSET"); got != "" {
		t.Errorf("Getenv(UNSET) = %q", got)
	}
}

func TestResolveMaxThoughtBytes(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int
		bad   bool
	}{
		{"", ledger.DefaultMaxThoughtBytes, false},
		{"4096", 4096, false},
		{"64K", 64 << 10, false},
		{"2M", 2 << 20, false},
		{"2MiB", 2 << 20, false},
		{"1G", 1 << 30, false},
		{"0", 0, true},
		{"-5", 0, true},
		{"2G", 0, true},
		{"lots", 0, true},
		{"1.5M", 0, true},
		{"99999999999999999999", 0, true},
	} {
		dir := t.TempDir()
		c, err := Resolve(Flags{DataDir: dir}, envOf(map[string]string{EnvMaxThoughtBytes: tc.value}))
		if tc.bad {
			var se *SettingError
			if !errors.As(err, &se) || se.Name != EnvMaxThoughtBytes {
				t.Errorf("%q: err = %v, want a SettingError naming %s", tc.value, err, EnvMaxThoughtBytes)
			}
			if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
				t.Errorf("%q: config.json was written for a refused setting", tc.value)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.value, err)
		}
		if c.MaxThoughtBytes != tc.want {
			t.Errorf("%q: MaxThoughtBytes = %d, want %d", tc.value, c.MaxThoughtBytes, tc.want)
		}
	}
}

func TestObservatorySettings(t *testing.T) {
	resolve := func(vars map[string]string) *Config {
		t.Helper()
		vars[EnvStorage] = "memory"
		vars[EnvDataDir] = t.TempDir()
		c, err := Resolve(Flags{}, func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	s, err := resolve(map[string]string{}).Observatory()
	if err != nil {
		t.Fatal(err)
	}
	if s.Enabled || s.HTTPAPI || s.Port != 1729 || s.MaxConnections != 100 || s.AbandonAfter != 24*time.Hour || s.LiveWindow != 5*time.Minute || len(s.Origins) != 0 {
		t.Errorf("defaults = %+v", s)
	}
	s, err = resolve(map[string]string{EnvObservatoryEnabled: "true", EnvObservatoryHTTPAPI: "1", EnvObservatoryPort: "0",
		EnvObservatoryMaxConnections: "3", EnvObservatoryAbandonAfter: "90m", EnvObservatoryLiveWindow: "90s", EnvObservatoryCORS: "https://a.example, http://b.example:8080/"}).Observatory()
	if err != nil {
		t.Fatal(err)
	}
	if !s.Enabled || !s.HTTPAPI || s.Port != 0 || s.MaxConnections != 3 || s.AbandonAfter != 90*time.Minute || s.LiveWindow != 90*time.Second ||
		strings.Join(s.Origins, " ") != "https://a.example http://b.example:8080" {
		t.Errorf("settings = %+v", s)
	}
	for name, bad := range map[string]string{EnvObservatoryEnabled: "maybe", EnvObservatoryPort: "70000",
		EnvObservatoryMaxConnections: "0", EnvObservatoryAbandonAfter: "-1h", EnvObservatoryLiveWindow: "soon", EnvObservatoryCORS: "example.org"} {
		_, err := resolve(map[string]string{name: bad}).Observatory()
		var se *SettingError
		if !errors.As(err, &se) || se.Name != name {
			t.Errorf("%s=%q: error %v, want a SettingError naming it", name, bad, err)
		}
	}
}

func TestResolveAutoPullInterval(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
		bad   bool
	}{
		{"", DefaultAutoPullInterval, false},
		{"2s", 2 * time.Second, false},
		{"5m", 5 * time.Minute, false},
		{"1s", time.Second, false},
		{"500ms", 0, true},
		{"0", 0, true},
		{"-30s", 0, true},
		{"30", 0, true},
		{"soon", 0, true},
	} {
		dir := t.TempDir()
		c, err := Resolve(Flags{DataDir: dir}, envOf(map[string]string{EnvAutoPullInterval: tc.value}))
		if tc.bad {
			var se *SettingError
			if !errors.As(err, &se) || se.Name != EnvAutoPullInterval || !strings.Contains(se.Reason, "at least 1s") {
				t.Errorf("%q: err = %v, want a SettingError naming %s", tc.value, err, EnvAutoPullInterval)
			}
			if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
				t.Errorf("%q: config.json was written for a refused setting", tc.value)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.value, err)
		}
		if c.AutoPullInterval != tc.want {
			t.Errorf("%q: AutoPullInterval = %v, want %v", tc.value, c.AutoPullInterval, tc.want)
		}
	}
}

func TestResolveAutoPushInterval(t *testing.T) {
	c, err := Resolve(Flags{DataDir: t.TempDir()}, envOf(map[string]string{}))
	if err != nil || c.AutoPushInterval != 0 {
		t.Fatalf("unset: %v, %v; want 0 (closed sessions only)", c, err)
	}
	c, err = Resolve(Flags{DataDir: t.TempDir()}, envOf(map[string]string{EnvAutoPushInterval: "2s"}))
	if err != nil || c.AutoPushInterval != 2*time.Second {
		t.Fatalf("2s: %v, %v", c, err)
	}
	dir := t.TempDir()
	_, err = Resolve(Flags{DataDir: dir}, envOf(map[string]string{EnvAutoPushInterval: "10ms"}))
	var se *SettingError
	if !errors.As(err, &se) || se.Name != EnvAutoPushInterval {
		t.Errorf("10ms: err = %v, want a SettingError naming %s", err, EnvAutoPushInterval)
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
		t.Errorf("config.json was written for a refused setting")
	}
}

func TestNotebookSettings(t *testing.T) {
	dir := t.TempDir()
	c, err := Resolve(Flags{Project: "p1"}, envOf(map[string]string{EnvDataDir: dir}))
	if err != nil {
		t.Fatal(err)
	}
	if c.NotebookTimeout != DefaultNotebookTimeout || c.NotebookWorkDir() != filepath.Join(dir, "notebooks", "p1") {
		t.Errorf("timeout %v, work dir %q", c.NotebookTimeout, c.NotebookWorkDir())
	}
	c, err = Resolve(Flags{}, envOf(map[string]string{EnvDataDir: dir, EnvNotebookTimeout: "1500ms", EnvStorage: "memory"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.NotebookTimeout != 1500*time.Millisecond || c.NotebookWorkDir() != "" {
		t.Errorf("memory: timeout %v, work dir %q (want none)", c.NotebookTimeout, c.NotebookWorkDir())
	}
	c, err = Resolve(Flags{}, envOf(map[string]string{EnvDataDir: dir, EnvNotebookTimeout: "30"}))
	if err != nil || c.NotebookTimeout != 30*time.Second {
		t.Errorf("plain seconds: %v, %v", c, err)
	}
}
