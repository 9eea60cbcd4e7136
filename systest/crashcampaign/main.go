//go:build unix

// Command crashcampaign kills thoughtbox processes with SIGKILL at random
// moments while they write, and checks after each kill that nothing
// acknowledged was lost and that no repository was left damaged.
//
// It builds the thoughtbox binary once (CGO_ENABLED=0) and goes round-robin
// over its workloads ("units"), each with a data directory of its own that
// lives for the whole campaign, so damage would pile up as it would on a
// real machine:
//
//   - cli: two `thoughtbox add` loops (one session each), killed mid-add;
//   - stdio: two `thoughtbox serve --transport stdio` on one data directory,
//     each driven by an MCP client on a session of its own, both killed;
//   - http: one `thoughtbox serve` over Streamable HTTP with several
//     concurrent clients, killed;
//   - push/<transport>: `thoughtbox push` to a bare remote, killed, then
//     pushed again;
//   - pull/<transport>: `thoughtbox pull` from a bare remote that another
//     ledger keeps pushing to, killed, then pulled again;
//   - team: two `thoughtbox serve` over HTTP, each on a ledger of its own,
//     writing the same sessions and sharing them through one bare remote
//     with auto-pull and auto-push, both killed, -team-cycles times a
//     round; then each ledger pulls
//     and pushes until both and the remote hold the same refs, with no
//     diverged chain left and every acknowledged thought in both ledgers
//     and on the remote (see team.go).
//
// The transports are `git` (git-upload-pack and git-receive-pack) and
// `builtin` (go-git's in-process server), chosen with
// THOUGHTBOX_FILE_TRANSPORT. A kill takes the process's whole group, so the
// git programs a push or pull started die with it, as on a crash.
//
// After each kill (ledger checks every -check-every kills of a unit):
// every acknowledged thought is in its session exactly once (read with
// `thoughtbox export --format json`), nothing refused or never sent is,
// `thoughtbox verify` says OK, `git fsck --strict --full` is clean on the
// ledger and the remote, every ref holds the id of an object that exists,
// and for push and pull a following run succeeds and brings every
// acknowledged thought across.
//
//	go run ./systest/crashcampaign -kills 1000
//	go run ./systest/crashcampaign -kills 300 -modes push -transports builtin -seed 7
//	go run ./systest/crashcampaign -kills 200 -modes team
//
// It exits 1 at the first loss or damage, naming the seed, the iteration
// and the data directory it keeps for inspection; on success it removes
// its temporary directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/internal/benchkit/build"
	"github.com/thoughtbox/thoughtbox/internal/benchkit/machine"
)

// config is what the flags set; tests build one directly.
type config struct {
	kills       int
	modes       []string
	transports  []string
	seed        uint64
	checkEvery  int
	httpClients int
	teamWindow  time.Duration
	teamCycles  int
	maxDelay    time.Duration
	duration    time.Duration
	skip        []string
	bin         string
	keep        bool
}

func main() {
	var cfg config
	var modes, transports, skip string
	flag.IntVar(&cfg.kills, "kills", 100, "stop after this many processes killed (all modes together), at the end of a cycle over the units")
	flag.StringVar(&modes, "modes", "cli,stdio,http,push,pull", "comma-separated workloads: cli, stdio, http, push, pull, team")
	flag.IntVar(&cfg.teamCycles, "team-cycles", 5, "team: kill cycles (both servers started, writing, killed) per round; the ledgers are settled and checked after each round")
	flag.DurationVar(&cfg.teamWindow, "team-window", 2*time.Second, "team servers are killed at a uniform random moment between 1s and 1s plus this after they start writing (auto-pull and auto-push run every second)")
	flag.StringVar(&transports, "transports", "git,builtin", "comma-separated file transports for push and pull: git, builtin")
	flag.Uint64Var(&cfg.seed, "seed", 0, "random seed (default: from the clock; printed either way)")
	flag.IntVar(&cfg.checkEvery, "check-every", 1, "check a unit's ledger after every K of its rounds (remotes are checked after every kill)")
	flag.IntVar(&cfg.httpClients, "http-clients", 4, "concurrent MCP clients on the HTTP server")
	flag.DurationVar(&cfg.maxDelay, "max-delay", 800*time.Millisecond, "a writer is killed at a uniform random moment up to this long after it starts writing")
	flag.DurationVar(&cfg.duration, "duration", 0, "stop starting rounds after this long (0: no limit)")
	flag.StringVar(&skip, "skip", "", "comma-separated units to leave out, e.g. push-builtin (units: cli, stdio, http, push-git, push-builtin, pull-git, pull-builtin)")
	flag.StringVar(&cfg.bin, "bin", "", "thoughtbox binary (default: go build ./cmd/thoughtbox, CGO_ENABLED=0)")
	flag.BoolVar(&killGroupToo, "kill-group", false, "kill the thoughtbox process's whole group (the git programs a push or pull started too), as a machine crash would")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the data directories even on success")
	flag.Parse()
	cfg.modes = splitList(modes)
	cfg.transports = splitList(transports)
	cfg.skip = splitList(skip)
	if cfg.seed == 0 {
		cfg.seed = uint64(time.Now().UnixNano())
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "crashcampaign:", err)
		os.Exit(2)
	}
	sum, err := run(context.Background(), cfg, os.Stdout)
	if sum != nil {
		sum.print(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashcampaign: FAIL:", err)
		os.Exit(1)
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (c *config) validate() error {
	if c.kills < 1 {
		return fmt.Errorf("-kills %d: want at least 1", c.kills)
	}
	if len(c.modes) == 0 {
		return errors.New("-modes: want at least one of cli, stdio, http, push, pull, team")
	}
	for _, m := range c.modes {
		switch m {
		case "cli", "stdio", "http", "push", "pull", "team":
		default:
			return fmt.Errorf("-modes: unknown mode %q, want cli, stdio, http, push, pull or team", m)
		}
	}
	for _, t := range c.transports {
		if t != "git" && t != "builtin" {
			return fmt.Errorf("-transports: unknown transport %q, want git or builtin", t)
		}
	}
	for _, m := range c.modes {
		if (m == "push" || m == "pull") && len(c.transports) == 0 {
			return fmt.Errorf("-modes %s needs -transports git and/or builtin", m)
		}
	}
	if c.checkEvery < 1 {
		return fmt.Errorf("-check-every %d: want at least 1", c.checkEvery)
	}
	if c.httpClients < 1 {
		return fmt.Errorf("-http-clients %d: want at least 1", c.httpClients)
	}
	if slices.Contains(c.modes, "team") && c.teamWindow <= 0 {
		return fmt.Errorf("-team-window %v: want a positive duration", c.teamWindow)
	}
	if slices.Contains(c.modes, "team") && c.teamCycles < 1 {
		return fmt.Errorf("-team-cycles %d: want at least 1", c.teamCycles)
	}
	if c.maxDelay <= 0 {
		return fmt.Errorf("-max-delay %v: want a positive duration", c.maxDelay)
	}
	return nil
}

// failure is the first thing found wrong: enough to find it again.
type failure struct {
	seed      uint64
	iteration int
	unit      string
	dir       string
	err       error
}

func (f *failure) Error() string {
	return fmt.Sprintf("seed %d, iteration %d, unit %s: %v\n(data kept in %s; rerun with -seed %d)",
		f.seed, f.iteration, f.unit, f.err, f.dir, f.seed)
}

func (f *failure) Unwrap() error { return f.err }

// run is the campaign. It returns the summary so far even on failure.
func run(ctx context.Context, cfg config, progress *os.File) (*summary, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, errors.New("git is not installed: the campaign checks repositories with git fsck")
	}
	work, err := os.MkdirTemp("", "crashcampaign")
	if err != nil {
		return nil, err
	}
	bin := cfg.bin
	if bin == "" {
		var err error
		if bin, err = build.Thoughtbox(work); err != nil {
			os.RemoveAll(work)
			return nil, err
		}
	}
	tb := &tool{bin: bin}
	rng := rand.New(rand.NewPCG(cfg.seed, 0x7468_6f75_6768_7462))

	var units []unit
	for _, m := range cfg.modes {
		switch m {
		case "cli":
			units = append(units, &cliUnit{unitStats: newBase(tb, work, "cli")})
		case "stdio":
			units = append(units, &stdioUnit{unitStats: newBase(tb, work, "stdio")})
		case "http":
			units = append(units, &httpUnit{unitStats: newBase(tb, work, "http"), clients: cfg.httpClients})
		case "push":
			for _, t := range cfg.transports {
				units = append(units, &pushUnit{unitStats: newBase(tb, work, "push-"+t), transfer: transfer{transport: t}})
			}
		case "pull":
			for _, t := range cfg.transports {
				units = append(units, &pullUnit{unitStats: newBase(tb, work, "pull-"+t), transfer: transfer{transport: t}})
			}
		case "team":
			units = append(units, &teamUnit{unitStats: newBase(tb, work, "team"), clients: 2, window: cfg.teamWindow, cycles: cfg.teamCycles})
		}
	}
	units = slices.DeleteFunc(units, func(u unit) bool { return slices.Contains(cfg.skip, u.stats().name) })
	if len(units) == 0 {
		os.RemoveAll(work)
		return nil, errors.New("-skip leaves no unit to run")
	}
	sum := &summary{seed: cfg.seed, start: time.Now(), cpu0: machine.CPUTime()}
	for _, u := range units {
		sum.units = append(sum.units, u.stats())
	}
	fail := func(it int, u unit, err error) (*summary, error) {
		sum.finish()
		return sum, &failure{seed: cfg.seed, iteration: it, unit: u.stats().name, dir: u.stats().dir, err: err}
	}
	for _, u := range units {
		if err := u.setup(ctx); err != nil {
			return fail(0, u, fmt.Errorf("setup: %w", err))
		}
	}
	fmt.Fprintf(progress, "crashcampaign: seed %d, %d kills over %d units, binary %s\n", cfg.seed, cfg.kills, len(units), bin)
	deadline := time.Time{}
	if cfg.duration > 0 {
		deadline = sum.start.Add(cfg.duration)
	}
	kills, lastReport := 0, time.Now()
	// Whole cycles only, so that every unit runs as many rounds as the
	// others however the kills fell.
	for it := 1; kills < cfg.kills || (it-1)%len(units) != 0; it++ {
		if !deadline.IsZero() && time.Now().After(deadline) {
			sum.stoppedBy = fmt.Sprintf("-duration %v", cfg.duration)
			break
		}
		u := units[(it-1)%len(units)]
		st := u.stats()
		st.rounds++
		k, err := u.round(ctx, rng, cfg.maxDelay)
		st.kills += k
		kills += k
		if err != nil {
			return fail(it, u, err)
		}
		if err := u.checkRemote(ctx); err != nil {
			st.remoteFailures++
			return fail(it, u, err)
		}
		if st.rounds%cfg.checkEvery == 0 {
			if err := st.checkLedgers(ctx); err != nil {
				return fail(it, u, err)
			}
		}
		if time.Since(lastReport) > 30*time.Second {
			lastReport = time.Now()
			fmt.Fprintf(progress, "crashcampaign: %v: %d kills, iteration %d, load %s\n",
				time.Since(sum.start).Round(time.Second), kills, it, machine.LoadAvg())
		}
	}
	// A last full check of every unit, whatever -check-every said.
	for _, u := range units {
		if err := u.stats().checkLedgers(ctx); err != nil {
			return fail(-1, u, fmt.Errorf("final check: %w", err))
		}
	}
	sum.finish()
	if cfg.keep {
		fmt.Fprintf(progress, "crashcampaign: data kept in %s\n", work)
	} else {
		os.RemoveAll(work)
	}
	return sum, nil
}
