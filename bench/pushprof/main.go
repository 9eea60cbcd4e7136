// Command pushprof pushes a ledger's repository to a remote, or pulls a
// remote into one, through gitstore/remote alone, with a CPU profile and a heap
// profile written every 10 seconds (the last one shows the transfer's peak
// working set better than one taken after it): the harness behind the
// push and clone rows of BENCHMARKS.md's "Scale: 100,000 sessions, a
// million thoughts".
//
//	git init --bare /tmp/r.git
//	go run ./bench/pushprof -repo /tmp/big/projects/_default.git -remote /tmp/r.git -cpu push.prof -mem heap.prof
//	git init --bare /tmp/c.git
//	go run ./bench/pushprof -pull -repo /tmp/c.git -remote /tmp/r.git -cpu pull.prof
//	go tool pprof -top push.prof
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/gitstore/remote"
)

func main() {
	repo := flag.String("repo", "", "the ledger's Git directory (<data dir>/projects/<name>.git; required)")
	remoteURL := flag.String("remote", "", "the remote: a path or URL (required)")
	pull := flag.Bool("pull", false, "pull from the remote instead of pushing to it")
	builtin := flag.Bool("builtin", false, "serve a file remote in-process even when git is installed")
	cpu := flag.String("cpu", "", "write a CPU profile here")
	mem := flag.String("mem", "", "write a heap profile here every 10 s")
	flag.Parse()
	if *repo == "" || *remoteURL == "" {
		fmt.Fprintln(os.Stderr, "pushprof: -repo and -remote are required")
		os.Exit(2)
	}
	st, err := gitstore.Open(*repo, gitstore.Options{})
	check(err)
	defer st.Close()
	if *cpu != "" {
		f, err := os.Create(*cpu)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	if *mem != "" {
		go func() {
			for {
				time.Sleep(10 * time.Second)
				if f, err := os.Create(*mem); err == nil {
					pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
				}
			}
		}()
	}
	o := remote.TransferOptions{Progress: os.Stderr, BuiltinFile: *builtin}
	start := time.Now()
	if *pull {
		res, err := remote.Pull(context.Background(), st, *remoteURL, o)
		check(err)
		fmt.Printf("pulled: %d refs created, %d objects, %d bytes, %s\n", len(res.Created), res.Objects, res.Bytes, time.Since(start).Round(time.Millisecond))
		return
	}
	res, err := remote.Push(context.Background(), st, *remoteURL, o)
	check(err)
	fmt.Printf("pushed: %d refs, %d objects, %d bytes, %s\n", len(res.Updated), res.Objects, res.Bytes, time.Since(start).Round(time.Millisecond))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "pushprof:", err)
		os.Exit(1)
	}
}
