package durable

import (
	"os"
	"path/filepath"
)

// CreateWhole writes data to a new file at path so that readers and a
// crash both see the whole file or no file: the data is written to a
// temporary file beside path, synced, linked to path (which fails with an
// error matching fs.ErrExist when path exists, leaving it untouched), and
// the directory is synced so that the new name survives a power cut. No
// temporary file is left behind either way. The file gets mode 0600, as
// os.CreateTemp gives.
func CreateWhole(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".create-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = Datasync(tmp)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	// A link, not a rename: a rename would replace a file that appeared
	// at path meanwhile, and callers rely on never replacing one.
	if err := os.Link(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}
