package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/thoughtbox/thoughtbox/config"
)

// startProfiles starts the debugging profiles the environment asks for
// (config.EnvCPUProfile, config.EnvHeapProfile) around any command, not only serve: the
// slow part of a command on a large ledger is found the same way as a
// server's. The returned stop writes them out.
func startProfiles(lookup func(string) (string, bool), stderr io.Writer) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if path, _ := lookup(config.EnvCPUProfile); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return stop, fmt.Errorf("%s: %w", config.EnvCPUProfile, err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return stop, fmt.Errorf("%s: %w", config.EnvCPUProfile, err)
		}
		stops = append(stops, func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}
	if path, _ := lookup(config.EnvHeapProfile); path != "" {
		stops = append(stops, func() {
			f, err := os.Create(path)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				fmt.Fprintf(stderr, "thoughtbox: %s: %v\n", config.EnvHeapProfile, err)
			}
		})
	}
	return stop, nil
}
