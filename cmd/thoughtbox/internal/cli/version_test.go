package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

func TestVersionCommandAndFlag(t *testing.T) {
	old, oldCommit := Version, Commit
	defer func() { Version, Commit = old, oldCommit }()
	Version, Commit = "v1.2.3", "0123abc"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errOut bytes.Buffer
		// No data directory is given: version must not open a project.
		code := Main(context.Background(), args, Env{Stdout: &out, Stderr: &errOut,
			LookupEnv: func(k string) (string, bool) {
				if k == "THOUGHTBOX_DATA_DIR" {
					return "/nonexistent/thoughtbox-version-test", true
				}
				return "", false
			}})
		if code != ExitOK {
			t.Fatalf("%v: exit %d, stderr %s", args, code, errOut.String())
		}
		want := "thoughtbox v1.2.3 (commit 0123abc, " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
		if out.String() != want {
			t.Errorf("%v printed %q, want %q", args, out.String(), want)
		}
	}
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"version", "--format", "json"}, Env{Stdout: &out}); code != ExitOK {
		t.Fatalf("version --format json: exit %d", code)
	}
	var bi BuildInfo
	if err := json.Unmarshal(out.Bytes(), &bi); err != nil || bi.Version != "v1.2.3" || bi.Commit != "0123abc" || !strings.HasPrefix(bi.Go, "go") {
		t.Errorf("json: %+v, %v (%s)", bi, err, out.String())
	}
}
