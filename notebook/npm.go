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

// Every dependency spec that reaches npm — an install_deps package and
// each entry of the package.json cell npm installs from — is a registry
// package name with a version, a range or a dist-tag: never a URL, a path,
// a tarball, a git spec, or a file:, link:, workspace: or npm: (alias)
// spec, which would let a notebook fetch from anywhere, link folders of
// the server into node_modules, or change npm's behaviour.
var (
	packageName = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$`)
	// versionRange admits semver versions and ranges (^1.2, ~1, >=1 <2,
	// 1.x || 2, 1.0.0-rc.1+build) and dist-tags (latest); it has no '/',
	// ':', '@', '#' or backslash, which every other kind of spec needs.
	versionRange = regexp.MustCompile(`^[A-Za-z0-9.^~<>=|* +-]*$`)
)

// maxSpecBytes bounds a package name (npm's own limit) and a range.
const maxSpecBytes = 214

// dependencySections are the package.json fields whose entries npm
// installs.
var dependencySections = []string{"dependencies", "devDependencies", "optionalDependencies", "peerDependencies"}

// maxPackages bounds one install_deps call.
const maxPackages = 20

// npmTimeout bounds one npm install.
const npmTimeout = 5 * time.Minute

const specHint = "a registry package's version, range or dist-tag (like ^1.2.0, 7 or latest); URLs, paths, tarballs, git and file:, link:, workspace: and npm: specs are refused"

func checkPackages(pkgs []string) error {
	if len(pkgs) == 0 {
		return ledger.InvalidField("packages", "expected at least one package name")
	}
	if len(pkgs) > maxPackages {
		return ledger.InvalidField("packages", "expected at most %d packages, got %d", maxPackages, len(pkgs))
	}
	for i, p := range pkgs {
		name, version := pkgName(p), ""
		if name != p {
			version = p[len(name)+1:]
		}
		if !validName(name) || !validRange(version) || name != p && version == "" {
			return ledger.InvalidField(fmt.Sprintf("packages[%d]", i), "expected an npm package name with an optional @version (like dayjs or is-number@7): %s; got %q", specHint, p)
		}
	}
	return nil
}

func validName(name string) bool {
	return len(name) <= maxSpecBytes && packageName.MatchString(name) && !strings.Contains(name, "..")
}

func validRange(v string) bool {
	return len(v) <= maxSpecBytes && versionRange.MatchString(v) && !strings.HasPrefix(v, ".") && !tarballName(v)
}

// tarballName reports a spec npm would read as a tarball file beside
// package.json (evil.tgz), not as a tag.
func tarballName(v string) bool {
	v = strings.ToLower(v)
	return strings.HasSuffix(v, ".tgz") || strings.HasSuffix(v, ".tar") || strings.HasSuffix(v, ".tar.gz")
}

// checkManifest checks the package.json text npm will install from: each
// dependency (and override) is a registry name with a version or range,
// and no workspaces link folders in. Errors name the field within the
// package.json, as dependencies.evil.
func checkManifest(src string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(src), &m); err != nil {
		return ledger.InvalidField("content", "a package.json cell holds a JSON object: %v", err)
	}
	for _, section := range dependencySections {
		raw, ok := m[section]
		if !ok || string(raw) == "null" {
			continue
		}
		var deps map[string]json.RawMessage
		if json.Unmarshal(raw, &deps) != nil {
			return ledger.InvalidField(section, "expected an object of package names and versions")
		}
		for _, name := range sortedKeys(deps) {
			field := section + "." + name
			if !validName(name) {
				return ledger.InvalidField(field, "expected an npm package name (like dayjs or @scope/pkg), got %q", name)
			}
			if err := checkSpecValue(field, deps[name]); err != nil {
				return err
			}
		}
	}
	if raw, ok := m["overrides"]; ok && string(raw) != "null" {
		if err := checkOverrides("overrides", raw); err != nil {
			return err
		}
	}
	if raw, ok := m["workspaces"]; ok && string(raw) != "null" && string(raw) != "[]" {
		return ledger.InvalidField("workspaces", "a notebook's package.json takes no workspaces: they link folders of the server into node_modules")
	}
	return nil
}

// checkSpecValue checks one dependency's spec, a JSON string.
func checkSpecValue(field string, raw json.RawMessage) error {
	var spec string
	if json.Unmarshal(raw, &spec) != nil {
		return ledger.InvalidField(field, "expected a string: %s", specHint)
	}
	if !validRange(spec) {
		return ledger.InvalidField(field, "expected %s; got %q", specHint, spec)
	}
	return nil
}

// checkOverrides checks npm's overrides: keys are package names (with an
// optional @range, or "." for the package itself), values a range or, for
// a package's own dependencies, another object of overrides.
func checkOverrides(field string, raw json.RawMessage) error {
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil {
		return checkSpecValue(field, raw)
	}
	for _, key := range sortedKeys(o) {
		f := field + "." + key
		name, version := pkgName(key), ""
		if name != key {
			version = key[len(name)+1:]
		}
		if key != "." && (!validName(name) || !validRange(version)) {
			return ledger.InvalidField(f, "expected an npm package name with an optional @range, got %q", key)
		}
		if err := checkOverrides(f, o[key]); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
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
	// The cell may come from a pull or from before specs were checked:
	// check it here, before npm reads it.
	if err := checkManifest(pj); err != nil {
		if e, ok := err.(*ledger.Error); ok {
			e.Message = "the notebook's package.json cell: " + e.Message + "; update the cell"
		}
		return InstallResult{}, err
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
