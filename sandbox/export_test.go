package sandbox

import (
	"os"
	"sort"
	"strconv"

	"github.com/dop251/goja"
)

// The child of a test binary gets a few more globals, to be looked at from
// inside. This runs at package initialisation, before init in child.go
// turns the test binary into a child.
var _ = func() bool {
	testGlobals = map[string]func(goja.FunctionCall, *goja.Runtime) goja.Value{
		// openFiles lists the child's descriptors as "fd -> target".
		"openFiles": func(_ goja.FunctionCall, vm *goja.Runtime) goja.Value {
			d, err := os.Open("/proc/self/fd")
			if err != nil {
				panic(vm.NewGoError(err))
			}
			names, _ := d.Readdirnames(-1)
			self := strconv.Itoa(int(d.Fd()))
			d.Close()
			var out []string
			for _, n := range names {
				if n == self {
					continue
				}
				target, _ := os.Readlink("/proc/self/fd/" + n)
				out = append(out, n+" -> "+target)
			}
			sort.Strings(out)
			return vm.ToValue(out)
		},
		"environ": func(_ goja.FunctionCall, vm *goja.Runtime) goja.Value { return vm.ToValue(os.Environ()) },
		"cwd": func(_ goja.FunctionCall, vm *goja.Runtime) goja.Value {
			wd, _ := os.Getwd()
			return vm.ToValue(wd)
		},
		// crash ends the child as a Go runtime failure would.
		"crash": func(goja.FunctionCall, *goja.Runtime) goja.Value {
			go func() { panic("boom from the test") }()
			select {}
		},
	}
	return true
}()
