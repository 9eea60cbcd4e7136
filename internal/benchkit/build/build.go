// Package build builds the thoughtbox binary the benchmarks and system
// tests drive: as released (static, CGO_ENABLED=0, so that a cgo build's
// libc mapping does not count in resident memory), from the module's
// root wherever the command runs from.
package build

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Thoughtbox builds ./cmd/thoughtbox into dir and returns the binary's
// path.
func Thoughtbox(dir string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	exe := filepath.Join(dir, "thoughtbox")
	cmd := exec.Command("go", "build", "-o", exe, "./cmd/thoughtbox")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return exe, nil
}

// ModuleRoot is the directory of go.mod, found by the go command from the
// working directory.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the thoughtbox module: run this from the repository")
	}
	return filepath.Dir(mod), nil
}
