package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/thoughtbox/thoughtbox/internal/tuning"
)

// Version (declared in serve.go, where MCP clients are told it) and
// Commit are stamped into release builds by release/build.sh:
//
//	go build -ldflags "-X github.com/thoughtbox/thoughtbox/cmd/thoughtbox/internal/cli.Version=v1.2.0
//	                   -X github.com/thoughtbox/thoughtbox/cmd/thoughtbox/internal/cli.Commit=<sha>"
//
// Unstamped (go install, go build), they come from the build information
// the Go toolchain records (see versionInfo), which `go version -m` reads
// too.
var Commit string

// unstampedVersion is Version's value in serve.go when no release stamped it.
const unstampedVersion = "0.1.0"

// BuildInfo is what `thoughtbox version` reports.
type BuildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
	// TricksOff names the tuning tricks a benchmark build goes without
	// (internal/tuning); empty in every build a user gets.
	TricksOff []string `json:"tricksOff,omitempty"`
}

// versionInfo is the stamped version and commit, else the module version
// (set by `go install …@version`) and the VCS revision the toolchain
// embedded (set by a build in a clone), else 0.1.0 and "unknown".
func versionInfo() BuildInfo {
	bi := BuildInfo{Version: Version, Commit: Commit, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, TricksOff: tuning.Off()}
	if info, ok := debug.ReadBuildInfo(); ok {
		if Version == unstampedVersion && info.Main.Version != "" && info.Main.Version != "(devel)" {
			bi.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && bi.Commit == "" {
				bi.Commit = s.Value
			}
			if s.Key == "vcs.modified" && s.Value == "true" && Commit == "" && bi.Commit != "" {
				bi.Commit += "+dirty"
			}
		}
	}
	if bi.Commit == "" {
		bi.Commit = "unknown"
	}
	return bi
}

// versionCmd prints the version; it opens no project.
type versionCmd struct{}

func writeVersion(w io.Writer, format Format) error {
	if format == FormatJSON {
		bi := versionInfo()
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(bi)
	}
	_, err := fmt.Fprintln(w, versionLine())
	return err
}

func versionLine() string {
	bi := versionInfo()
	line := fmt.Sprintf("thoughtbox %s (commit %s, %s, %s)", bi.Version, bi.Commit, bi.Go, bi.Platform)
	if len(bi.TricksOff) > 0 {
		line += "; built without " + strings.Join(bi.TricksOff, ", ")
	}
	return line
}
