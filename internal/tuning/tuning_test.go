package tuning

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A user's build has every trick on.
func TestAllOnByDefault(t *testing.T) {
	for name, v := range map[string]bool{"sysmon": SysmonAwake, "inline": InlineAnswer, "memgov": MemoryGovernor} {
		if !v {
			t.Errorf("%s is off in a build without -X", name)
		}
	}
	if len(known) != 3 || len(Off()) != 0 {
		t.Errorf("known = %v, off = %v; want the three tricks, none off", known, Off())
	}
}

// A benchmark build goes without the tricks it names, and one that names
// an unknown trick refuses to start. The package's own test binary is the
// build: built again with the linker flag, it prints its switches.
func TestOffByLinkerFlag(t *testing.T) {
	if os.Getenv("TUNING_PRINT") != "" {
		fmt.Println("switches:", InlineAnswer, MemoryGovernor, SysmonAwake, Off())
		return
	}
	if testing.Short() {
		t.Skip("builds the package's tests again")
	}
	run := func(off string) (string, error) {
		c := exec.Command("go", "test", "-count=1", "-run", "^TestOffByLinkerFlag$", "-v",
			"-ldflags", "-X github.com/thoughtbox/thoughtbox/internal/tuning.off="+off, ".")
		c.Env = append(os.Environ(), "TUNING_PRINT=1", "CGO_ENABLED=0")
		out, err := c.CombinedOutput()
		return string(out), err
	}
	if out, err := run("inline,sysmon"); err != nil || !strings.Contains(out, "switches: false true false [inline sysmon]") {
		t.Errorf("off=inline,sysmon: %v\n%s", err, out)
	}
	out, err := run("memgv")
	if err == nil || !strings.Contains(out, `"memgv"`) || !strings.Contains(out, "memgov") {
		t.Errorf("a misspelt name started (%v) or its message does not say which:\n%s", err, out)
	}
}
