package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
	"github.com/thoughtbox/thoughtbox/internal/durable"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// File is config.json, the Config of seed 002.
type File struct {
	// InstallID identifies this installation (a UUID).
	InstallID string `json:"installId"`
	// DataDir is the data directory the file was created in.
	DataDir string `json:"dataDir"`
	// DisableThoughtLogging asks for no thought output on stderr.
	DisableThoughtLogging bool `json:"disableThoughtLogging"`
	// SessionPartitionGranularity groups session folders by creation time.
	SessionPartitionGranularity ledger.Granularity `json:"sessionPartitionGranularity"`
	CreatedAt                   time.Time          `json:"createdAt"`
}

// newFile returns the configuration written on a first run.
func newFile(dataDir string, now time.Time) File {
	return File{
		InstallID:                   uuid.NewString(),
		DataDir:                     dataDir,
		SessionPartitionGranularity: ledger.PartitionMonthly,
		CreatedAt:                   now.UTC().Truncate(time.Second),
	}
}

// ReadFile reads and checks a config.json. An absent or empty
// sessionPartitionGranularity means monthly.
func ReadFile(path string) (File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return File{}, err
	}
	return parseFile(path, data)
}

func parseFile(path string, data []byte) (File, error) {
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return File{}, fmt.Errorf("%s: %w", path, err)
	}
	g, err := ledger.ParseGranularity(string(f.SessionPartitionGranularity))
	if err != nil {
		return File{}, fmt.Errorf("%s: sessionPartitionGranularity %q: expected monthly, weekly, daily or none",
			path, f.SessionPartitionGranularity)
	}
	f.SessionPartitionGranularity = g
	return f, nil
}

// loadOrCreate reads dataDir/config.json. If there is none and create is
// set, it writes a new one; if another process creates it at the same
// moment, that one is read instead, so the file is never overwritten.
func loadOrCreate(dataDir string, create bool, now func() time.Time) (File, bool, error) {
	path := filepath.Join(dataDir, FileName)
	f, err := ReadFile(path)
	switch {
	case err == nil:
		return f, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return File{}, false, fmt.Errorf("read configuration: %w", err)
	case !create:
		return newFile(dataDir, now()), false, nil
	}

	f = newFile(dataDir, now())
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return File{}, false, err
	}
	data = append(data, '\n')
	created, err := createExclusive(dataDir, path, data)
	if err != nil {
		return File{}, false, fmt.Errorf("create configuration %s: %w", path, err)
	}
	if !created {
		f, err = ReadFile(path)
		if err != nil {
			return File{}, false, fmt.Errorf("read configuration: %w", err)
		}
	}
	return f, created, nil
}

// createExclusive writes data to path unless path exists, in which case it
// reports false. The file appears whole or not at all: it is written to a
// temporary file, synced, and hard-linked into place (link, unlike rename,
// fails when the target exists).
func createExclusive(dir, path string, data []byte) (bool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, err
	}
	tmp, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return false, err
	}
	switch err := os.Link(tmp.Name(), path); {
	case err == nil:
		return true, syncDir(dir)
	case errors.Is(err, fs.ErrExist):
		return false, nil
	}
	// No hard links on this filesystem: fall back to an exclusive create.
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, err = out.Write(data)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err == nil, err
}

func syncDir(dir string) error {
	if err := durable.SyncDir(dir); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}
