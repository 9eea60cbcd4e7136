package agentconfig

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/thoughtbox/thoughtbox/internal/durable"
)

// writeAtomic replaces path with data: written to a temporary file in the
// same folder, synced, given mode, and renamed over path.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = durable.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return durable.SyncDir(dir)
}
