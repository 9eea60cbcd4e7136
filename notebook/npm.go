package notebook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
)

// ErrNPMUnavailable is returned (as the cause of an INTERNAL_ERROR that
// says what to do) when install_deps is asked for and npm is not on PATH.
var ErrNPMUnavailable = errors.New("npm is not available")

// packageSpec is what install_deps accepts: a registry package name, with
// an optional version or range — never a URL, a path, a git spec, an
// alias or a flag, which would let a notebook fetch from anywhere or
// change npm's behaviour.
var packageSpec = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*(@[A-Za-z0-9.^~<>=|* -]+)?$`)

// maxPackages bounds one install_deps call.
const maxPackages = 20

// npmTimeout bounds one npm install.
const npmTimeout = 5 * time.Minute

func checkPackages(pkgs []string) error {
	if len(pkgs) == 0 {
		return ledger.InvalidField("packages", "expected at least one package name")
	}
	if len(pkgs) > maxPackages {
		return ledger.InvalidField("packages", "expected at most %d packages, got %d", maxPackages, len(pkgs))
	}
	for i, p := range pkgs {
		if len(p) > 214 || !packageSpec.MatchString(p) || strings.Contains(p, "..") {
			return ledger.InvalidField(fmt.Sprintf("packages[%d]", i), "expected an npm package name with an optional @version (like dayjs or is-number@7), got %q", p)
		}
	}
	return nil
}

// pkgName is the name part of a spec ("@scope/x@1" → "@scope/x").
func pkgName(spec string) string {
	at := strings.LastIndex(spec, "@")
	if at > 0 {
		return spec[:at]
	}
	return spec
}

// InstallDeps runs `npm install` (no scripts) for packages in the
// notebook's work folder and records the exact versions installed in its
// package.json cell, in one commit.
func (s *Service) InstallDeps(ctx context.Context, notebookID string, packages []string, author ledger.Author) (InstallResult, error) {
	if err := checkPackages(packages); err != nil {
		return InstallResult{}, err
	}
	nb, err := s.Load(ctx, notebookID)
	if err != nil {
		return InstallResult{}, err
	}
	npm := s.opts.NPM
	if npm == "" {
		npm, err = exec.LookPath("npm")
		if err != nil {
			return InstallResult{}, ledger.Errorf(ledger.CodeInternal, "install_deps needs npm, and there is none on this server's PATH (%w): install Node.js and npm where the server runs, or install the packages yourself into the notebook's node_modules folder", ErrNPMUnavailable)
		}
	}
	// One npm at a time in a work folder: two would write the same
	// node_modules and package.json. (Not the notebook's own lock, which
	// the commit below takes.)
	defer s.lock("npm:" + notebookID)()
	dir, err := s.workDir(notebookID)
	if err != nil {
		return InstallResult{}, err
	}
	// npm works on the package.json in the folder: start from the cell's.
	pj := packageJSON(nb.Language)
	for _, c := range nb.Cells {
		if c.Type == PackageJSONCell {
			pj = c.Source
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(pj), 0o644); err != nil {
		return InstallResult{}, ledger.Errorf(ledger.CodeStorage, "writing the work folder's package.json: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, npmTimeout)
	defer cancel()
	args := append([]string{"install", "--ignore-scripts", "--no-audit", "--no-fund", "--save-exact", "--no-package-lock", "--"}, packages...)
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return InstallResult{}, ledger.Errorf(ledger.CodeInternal, "npm install %s failed (%v): %s", strings.Join(packages, " "), err, cutText(out.String(), 4000))
	}
	written, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return InstallResult{}, ledger.Errorf(ledger.CodeStorage, "reading the package.json npm wrote: %w", err)
	}
	res := InstallResult{Installed: map[string]string{}, PackageJSON: string(written), Output: cutText(out.String(), 4000)}
	for _, p := range packages {
		name := pkgName(p)
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"))
		var v struct{ Version string }
		if err != nil || json.Unmarshal(b, &v) != nil {
			return InstallResult{}, ledger.Errorf(ledger.CodeInternal, "npm reported success but %s is not in node_modules", name)
		}
		res.Installed[name] = v.Version
	}
	names := make([]string, 0, len(res.Installed))
	for n, v := range res.Installed {
		names = append(names, n+"@"+v)
	}
	sort.Strings(names)
	_, err = s.change(ctx, notebookID, author, func(nb *Notebook) (string, error) {
		i := -1
		for j, c := range nb.Cells {
			if c.Type == PackageJSONCell {
				i = j
			}
		}
		if i < 0 {
			c := Cell{ID: newCellID(), Type: PackageJSONCell, Filename: "package.json"}
			at := 0
			if len(nb.Cells) > 0 && nb.Cells[0].Type == TitleCell {
				at = 1
			}
			nb.Cells = append(nb.Cells[:at], append([]Cell{c}, nb.Cells[at:]...)...)
			i = at
		}
		c := &nb.Cells[i]
		out := res.Output
		c.Source, c.Status, c.Output, c.Error = res.PackageJSON, StatusCompleted, &out, nil
		return "Install " + strings.Join(names, " "), nil
	})
	if err != nil {
		return InstallResult{}, err
	}
	return res, nil
}

func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… [%d more bytes]", len(s)-n)
}
