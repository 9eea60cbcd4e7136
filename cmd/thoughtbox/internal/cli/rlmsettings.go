package cli

import (
	"strconv"
	"strings"
	"time"

	"github.com/thoughtbox/thoughtbox/config"
	"github.com/thoughtbox/thoughtbox/gateway/rlm"
	"github.com/thoughtbox/thoughtbox/sandbox"
)

// The bounds a setting may take: past them a run would hold a connection
// for minutes or the sandbox more memory than a server should lend one
// call.
const (
	maxRLMIterations   = 100
	maxRLMBlockTimeout = 10 * time.Minute
	maxRLMOutput       = 1 << 20
	minRLMMemory       = 16 << 20
	maxRLMMemory       = 1 << 30
)

// seedFlags are serve's flags for settings seed 000 and seed 004 name.
type seedFlags struct {
	rlmFlags    `embed:""`
	sessionFlag `embed:""`
}

// rlmFlags are serve's RLM flags, as given ("" when not given: the
// environment, then the default, decides).
type rlmFlags struct {
	RLMMaxIterations string `name:"rlm-max-iterations" placeholder:"N" help:"Turns the root model gets in an RLM run (env THOUGHTBOX_RLM_MAX_ITERATIONS; default 12; 1-100)."`
	RLMBlockTimeout  string `name:"rlm-block-timeout" placeholder:"DURATION" help:"Computing time of one RLM repl block (env THOUGHTBOX_RLM_BLOCK_TIMEOUT; default 5s; up to 10m)."`
	RLMMaxOutput     string `name:"rlm-max-output" placeholder:"BYTES" help:"What one RLM repl block may print (env THOUGHTBOX_RLM_MAX_OUTPUT; default 8K; up to 1M)."`
	RLMMemory        string `name:"rlm-memory" placeholder:"BYTES" help:"Memory of the RLM sandbox process (env THOUGHTBOX_RLM_MEMORY; default 256M; 16M-1G)."`
}

// rlmSettings reads the RLM limits from the flags, else the environment,
// else seed 004's defaults; a bad value is a SettingError naming the flag
// or variable it came from.
func (f rlmFlags) rlmSettings(cfg *config.Config) (rlm.Options, error) {
	o := rlm.Options{MaxIterations: rlm.DefaultMaxIterations, BlockTimeout: rlm.DefaultBlockTimeout,
		MaxOutput: rlm.DefaultMaxOutput, Sandbox: sandbox.Limits{Memory: sandbox.DefaultMemory}}
	pick := func(flag, flagName, env string) (name, value string, ok bool) {
		if flag != "" {
			return flagName, strings.TrimSpace(flag), true
		}
		if v := strings.TrimSpace(cfg.Getenv(env)); v != "" {
			return env, v, true
		}
		return "", "", false
	}
	if name, v, ok := pick(f.RLMMaxIterations, "--rlm-max-iterations", config.EnvRLMMaxIterations); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxRLMIterations {
			return o, &config.SettingError{Name: name, Value: v, Reason: "expected a whole number of iterations from 1 to 100"}
		}
		o.MaxIterations = n
	}
	if name, v, ok := pick(f.RLMBlockTimeout, "--rlm-block-timeout", config.EnvRLMBlockTimeout); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > maxRLMBlockTimeout {
			return o, &config.SettingError{Name: name, Value: v, Reason: "expected a positive Go duration up to 10m, such as 5s or 1500ms"}
		}
		o.BlockTimeout = d
	}
	if name, v, ok := pick(f.RLMMaxOutput, "--rlm-max-output", config.EnvRLMMaxOutput); ok {
		n, err := config.ParseSize(v)
		if err != nil || n > maxRLMOutput {
			return o, &config.SettingError{Name: name, Value: v, Reason: "expected a number of bytes from 1 to 1M, optionally with a K or M suffix (e.g. 8K)"}
		}
		o.MaxOutput = n
	}
	if name, v, ok := pick(f.RLMMemory, "--rlm-memory", config.EnvRLMMemory); ok {
		n, err := config.ParseSize(v)
		if err != nil || n < minRLMMemory || n > maxRLMMemory {
			return o, &config.SettingError{Name: name, Value: v, Reason: "expected a number of bytes from 16M to 1G, with a K, M or G suffix (e.g. 256M)"}
		}
		o.Sandbox.Memory = int64(n)
	}
	return o, nil
}
