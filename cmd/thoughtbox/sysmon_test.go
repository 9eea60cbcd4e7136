package main

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestSysmonEnv(t *testing.T) {
	base := []string{"HOME=/h", "PATH=/bin"}
	for _, tc := range []struct {
		name    string
		args    []string
		environ []string
		want    []string // nil: no new exec
	}{
		{"serve", []string{"serve"}, base, append(slices.Clone(base), "GODEBUG="+sysmonSetting)},
		{"serve with flags", []string{"--project", "p", "serve", "--transport", "stdio"}, base, nil},
		{"flag first", []string{"-v", "serve"}, base, append(slices.Clone(base), "GODEBUG="+sysmonSetting)},
		{"other command", []string{"sessions", "serve"}, base, nil},
		{"no command", nil, base, nil},
		{"after --", []string{"--", "serve"}, base, nil},
		{"GODEBUG kept", []string{"serve"}, []string{"GODEBUG=gctrace=1", "HOME=/h"}, []string{"GODEBUG=gctrace=1," + sysmonSetting, "HOME=/h"}},
		{"empty GODEBUG", []string{"serve"}, []string{"GODEBUG="}, []string{"GODEBUG=" + sysmonSetting}},
		{"user's schedtrace", []string{"serve"}, []string{"GODEBUG=gctrace=1, schedtrace=0"}, nil},
		{"stdio flag", []string{"serve", "--transport", "stdio"}, base, nil},
		{"stdio flag with =", []string{"serve", "--transport=stdio"}, base, nil},
		{"stdio env", []string{"serve"}, []string{"THOUGHTBOX_TRANSPORT=stdio"}, nil},
		{"http flag over stdio env", []string{"serve", "--transport", "http"}, []string{"THOUGHTBOX_TRANSPORT=stdio"}, []string{"THOUGHTBOX_TRANSPORT=stdio", "GODEBUG=" + sysmonSetting}},
		{"http env", []string{"serve"}, []string{"THOUGHTBOX_TRANSPORT=http"}, []string{"THOUGHTBOX_TRANSPORT=http", "GODEBUG=" + sysmonSetting}},
		{"empty env is http", []string{"serve"}, []string{"THOUGHTBOX_TRANSPORT="}, []string{"THOUGHTBOX_TRANSPORT=", "GODEBUG=" + sysmonSetting}},
		{"flag value after --", []string{"serve", "--", "--transport=stdio"}, base, append(slices.Clone(base), "GODEBUG="+sysmonSetting)},
	} {
		got, ok := sysmonEnv(tc.args, tc.environ)
		if ok != (tc.want != nil) || !slices.Equal(got, tc.want) {
			t.Errorf("%s: sysmonEnv(%q, %q) = %q, %v; want %q", tc.name, tc.args, tc.environ, got, ok, tc.want)
		}
	}
}

// TestServeCalmsSysmon: the server binary runs serve with the setting in
// its environment (it has executed itself again, keeping its pid), and
// leaves a GODEBUG that sets schedtrace alone.
func TestServeCalmsSysmon(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	bin := thoughtboxBinary(t)
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"GODEBUG=gctrace=0"}, "GODEBUG=gctrace=0," + sysmonSetting},
		{[]string{"GODEBUG=schedtrace=0"}, "GODEBUG=schedtrace=0"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		env := append([]string{"THOUGHTBOX_DATA_DIR=" + t.TempDir()}, tc.env...)
		_, cmd := startServeHTTP(t, ctx, bin, env...)
		data, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/environ")
		cancel()
		cmd.Wait()
		if err != nil {
			t.Fatal(err)
		}
		var godebug []string
		for _, kv := range strings.Split(string(data), "\x00") {
			if strings.HasPrefix(kv, "GODEBUG=") {
				godebug = append(godebug, kv)
			}
		}
		if len(godebug) != 1 || godebug[0] != tc.want {
			t.Errorf("with %q the server's GODEBUG is %q, want %q", tc.env, godebug, tc.want)
		}
	}
}
