package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// moduleRoot makes a work folder with node_modules holding one package
// (lib, main lib/main.js, which requires a sibling file and a JSON file)
// and returns its real path.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write := func(rel, text string) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("node_modules/lib/package.json", `{"name":"lib","main":"lib/main.js"}`)
	write("node_modules/lib/lib/main.js", `const h = require('./half'); module.exports = { twice: x => 2 * x, half: h, meta: require('./meta.json') };`)
	write("node_modules/lib/lib/half.js", `module.exports = x => x / 2;`)
	write("node_modules/lib/lib/meta.json", `{"version":"1.2.3"}`)
	return root
}

func runModule(t *testing.T, s *Session, name string) Result {
	t.Helper()
	r, err := s.RunModule(t.Context(), name, RunOptions{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func TestModulesShareInstancesAndReachNodeModules(t *testing.T) {
	root := moduleRoot(t)
	s := start(t, Config{Modules: &Modules{Root: root,
		Sources: map[string]string{
			"cells/a.js": `let n = 0; exports.next = () => ++n; console.log("a ran");`,
			"cells/b.js": `const a = require('./a'); const lib = require('lib'); console.log(a.next(), a.next(), lib.twice(21), lib.half(9), lib.meta.version);`,
			"cells/c.js": `console.log(require('./a.js').next(), require('./01-a.js').next());`,
		},
		Aliases: map[string]string{"cells/a": "cells/a.js", "cells/01-a.js": "cells/a.js"},
	}})
	if r := runModule(t, s, "cells/a.js"); r.Error != "" || r.Output != "a ran\n" {
		t.Fatalf("a: %+v", r)
	}
	// b sees a's one instance (a does not run again) and the package.
	if r := runModule(t, s, "cells/b.js"); r.Error != "" || r.Output != "1 2 42 4.5 1.2.3\n" {
		t.Fatalf("b: %+v", r)
	}
	if r := runModule(t, s, "cells/c.js"); r.Error != "" || r.Output != "3 4\n" {
		t.Fatalf("c: %+v", r)
	}
}

func TestModulesRefuseTheOutside(t *testing.T) {
	root := moduleRoot(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.js"), []byte(`module.exports = "secret"`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A package that is a link out of node_modules, and a file in a
	// package that links out.
	if err := os.Symlink(outside, filepath.Join(root, "node_modules", "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.js"), filepath.Join(root, "node_modules", "lib", "secret.js")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "package.json"), []byte(`{"name":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		`require('fs')`:                             "module 'fs' is not available in notebooks",
		`require('node:fs')`:                        "module 'node:fs' is not available in notebooks",
		`require('fs/promises')`:                    "module 'fs/promises' is not available",
		`require('child_process')`:                  "module 'child_process' is not available in notebooks",
		`require('net')`:                            "module 'net' is not available",
		`require('http')`:                           "module 'http' is not available",
		`require('/etc/passwd')`:                    "module '/etc/passwd' is outside the notebook's folder",
		`require('../../../../../../etc/passwd')`:   "is outside the notebook's folder",
		`require('escape/secret.js')`:               "cannot find module 'escape/secret.js'",
		`require('lib/secret.js')`:                  "cannot find module 'lib/secret.js'",
		`require('../package.json')`:                "cannot find module '../package.json'",
		`require('missing-package')`:                "not installed in this notebook's node_modules",
		`require(` + "`" + outside + "/secret.js`)": "is outside the notebook's folder",
	}
	sources := map[string]string{}
	i := 0
	for code := range cases {
		i++
		name := "cells/case" + string(rune('a'+i)) + ".js"
		sources[name] = "const got = " + code + ";\nconsole.log('leaked', got);"
	}
	s := start(t, Config{Modules: &Modules{Root: root, Sources: sources}})
	for code, want := range cases {
		var name string
		for n, src := range sources {
			if strings.Contains(src, code+";") {
				name = n
			}
		}
		r := runModule(t, s, name)
		if !strings.Contains(r.Error, want) || strings.Contains(r.Output, "leaked") {
			t.Errorf("%s: got error %q output %q, want an error containing %q", code, r.Error, r.Output, want)
		}
		if !strings.Contains(r.Error, "at "+name+":1:") {
			t.Errorf("%s: error %q does not name %s line 1", code, r.Error, name)
		}
	}
}

func TestModuleTimersRunBeforeTheRunEnds(t *testing.T) {
	s := start(t, Config{Modules: &Modules{Root: moduleRoot(t), Sources: map[string]string{
		"cells/t.js": `
const order = [];
setTimeout(() => order.push('late'), 50);
setTimeout((x) => order.push(x), 10, 'early');
const id = setTimeout(() => order.push('cleared'), 5);
clearTimeout(id);
let ticks = 0;
const iv = setInterval(() => { if (++ticks === 3) clearInterval(iv); }, 20);
const sleep = ms => new Promise(r => setTimeout(r, ms));
(async () => { await sleep(30); order.push('after sleep'); await sleep(100); console.log(order.join(','), ticks); })();
`,
		"cells/reject.js": `Promise.reject(new Error('nobody caught me'));`,
		"cells/spin.js":   `setInterval(() => {}, 1);`,
	}}})
	if r := runModule(t, s, "cells/t.js"); r.Error != "" || r.Output != "early,after sleep,late 3\n" {
		t.Fatalf("timers: %+v", r)
	}
	if r := runModule(t, s, "cells/reject.js"); !strings.Contains(r.Error, "Uncaught (in promise)") || !strings.Contains(r.Error, "nobody caught me") {
		t.Fatalf("rejection: %+v", r)
	}
	if r := runModule(t, s, "cells/spin.js"); !strings.Contains(r.Error, "an interval that is never cleared") {
		t.Fatalf("endless interval: %+v", r)
	}
}

func TestModuleInterruptedAndSessionGoesOn(t *testing.T) {
	s := start(t, Config{Modules: &Modules{Root: moduleRoot(t), Sources: map[string]string{
		"cells/loop.js": `console.log('before'); for (;;) {}`,
		"cells/ok.js":   `console.log('still here')`,
	}}})
	r, err := s.RunModule(t.Context(), "cells/loop.js", RunOptions{Timeout: 200 * time.Millisecond})
	if err != nil || !r.Interrupted || !strings.Contains(r.Error, "interrupted") || r.Output != "before\n" {
		t.Fatalf("loop: %+v, %v", r, err)
	}
	if r := runModule(t, s, "cells/ok.js"); r.Error != "" || r.Output != "still here\n" {
		t.Fatalf("after the loop: %+v", r)
	}
}

func TestRunModuleNeedsModules(t *testing.T) {
	s := start(t, Config{})
	if _, err := s.RunModule(t.Context(), "cells/x.js", RunOptions{}); err == nil {
		t.Fatal("RunModule on a session without Modules: no error")
	}
	// The RLM path has no require and no timers.
	if r := mustRun(t, s, `[typeof require, typeof setTimeout]`); r.Value != `["undefined","undefined"]` {
		t.Fatalf("globals of a session without Modules: %+v", r)
	}
}

func TestSetModulesOnASpare(t *testing.T) {
	spare := start(t, Config{Modules: &Modules{}})
	root := moduleRoot(t)
	// Before SetModules a spare finds nothing.
	if _, err := spare.RunModule(t.Context(), "cells/a.js", RunOptions{}); err == nil {
		t.Fatal("RunModule before SetModules: no error")
	}
	if err := spare.SetModules(&Modules{Root: "relative"}); err == nil {
		t.Fatal("SetModules with a relative root: no error")
	}
	if err := spare.SetModules(&Modules{Root: root, Sources: map[string]string{"cells/a.js": `console.log(require('lib').twice(4))`}}); err != nil {
		t.Fatal(err)
	}
	if r := runModule(t, spare, "cells/a.js"); r.Error != "" || r.Output != "8\n" {
		t.Fatalf("after SetModules: %+v", r)
	}
	if err := spare.SetModules(&Modules{Root: root}); err == nil {
		t.Fatal("SetModules twice: no error")
	}
	if err := start(t, Config{Modules: &Modules{Root: root}}).SetModules(&Modules{Root: root}); err == nil {
		t.Fatal("SetModules on a session that has its modules: no error")
	}
}
