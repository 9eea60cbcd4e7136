// Package step is what the benchmark commands that drive git and the
// thoughtbox binary share: running a command and stopping the whole
// benchmark at its first failure (a figure from a half-failed run would
// mislead), and reading percentiles off sorted timings.
package step

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Output runs name with args in dir and returns its standard output; a
// failure ends the program, naming the command and what it printed on
// standard error.
func Output(dir, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		Fail(fmt.Errorf("%s %s: %w %s", name, strings.Join(args, " "), err, stderr))
	}
	return string(out)
}

// Run is Output without the output.
func Run(dir, name string, args ...string) { Output(dir, name, args...) }

// Check ends the program if err is not nil.
func Check(err error) {
	if err != nil {
		Fail(err)
	}
}

// Fail prints err after the program's name and exits 1.
func Fail(err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", filepath.Base(os.Args[0]), err)
	os.Exit(1)
}

// Pct is the p-th percentile of sorted (nearest rank).
func Pct[T any](sorted []T, p int) T {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

// MS is d in milliseconds, for printing.
func MS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
