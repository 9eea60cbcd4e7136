//go:build unix

package main

import (
	"os"
	"syscall"

	"github.com/thoughtbox/thoughtbox/internal/tuning"
)

// calmSysmon runs this binary again, in this process, with sysmonSetting
// in GODEBUG (see there) when it is needed; it returns when it is not or
// when the exec fails, and the command then runs as it is.
func calmSysmon() {
	env, ok := sysmonEnv(os.Args[1:], os.Environ())
	if !ok || !tuning.SysmonAwake {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	_ = syscall.Exec(exe, os.Args, env)
}
