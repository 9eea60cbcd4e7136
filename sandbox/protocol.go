package sandbox

import "encoding/json"

// The parent and the child speak newline-delimited JSON over the child's
// stdin (parent to child) and stdout (child to parent). Every message is
// one object; its "type" says which fields matter. The exchange is:
//
//	parent: init            child: ready (or exits with the reason on stderr)
//	parent: run             child: call … done
//	parent: reply (a call)  parent: interrupt (any time during a run)
//	parent: modules (between runs, before the first: SetModules)
//
// A run is answered by exactly one done; in between, the child may send
// host calls, each answered by one reply carrying its id. Closing the
// child's stdin ends it.
type message struct {
	Type string `json:"type"`
	ID   uint64 `json:"id,omitempty"`

	// init
	Globals      map[string]json.RawMessage `json:"globals,omitempty"`
	HostFuncs    []string                   `json:"hostFuncs,omitempty"`
	MemoryBytes  int64                      `json:"memoryBytes,omitempty"`
	CPUSeconds   int64                      `json:"cpuSeconds,omitempty"`
	MaxCallDepth int                        `json:"maxCallDepth,omitempty"`
	MaxHostArg   int                        `json:"maxHostArg,omitempty"`
	Modules      *Modules                   `json:"modules,omitempty"`

	// run
	Code      string `json:"code,omitempty"`
	Module    string `json:"module,omitempty"` // run this in-memory module instead of Code
	TimeoutMS int64  `json:"timeoutMs,omitempty"`
	MaxOutput int    `json:"maxOutput,omitempty"`
	MaxValue  int    `json:"maxValue,omitempty"`
	Echo      bool   `json:"echo,omitempty"`

	// call (child to parent)
	Func    string `json:"func,omitempty"`
	Arg     string `json:"arg,omitempty"`
	Nullish bool   `json:"nullish,omitempty"`

	// reply (parent to child): Result is JSON, absent for undefined.
	Result json.RawMessage `json:"result,omitempty"`

	// done (child to parent); Error is also set on a failed reply.
	Output      string `json:"output,omitempty"`
	Value       string `json:"value,omitempty"`
	HasValue    bool   `json:"hasValue,omitempty"`
	Error       string `json:"error,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
}

// Message types.
const (
	msgInit      = "init"
	msgReady     = "ready"
	msgRun       = "run"
	msgCall      = "call"
	msgReply     = "reply"
	msgInterrupt = "interrupt"
	msgDone      = "done"
	msgModules   = "modules" // parent to child, between runs: SetModules
)

// childEnv is the environment variable that makes a binary linking this
// package run as a sandbox child; its value is the protocol version, so
// that a binary replaced on disk by another release refuses to serve an
// older parent instead of misreading it.
const (
	childEnv        = "THOUGHTBOX_SANDBOX_CHILD"
	protocolVersion = "2"
)

// Exit codes of the child that the parent interprets.
const (
	exitProtocol = 70 // the parent sent something the child cannot read
	exitCPU      = 71 // RLIMIT_CPU's soft limit was reached (SIGXCPU)
	exitMemory   = 72 // the child's own heap watchdog saw the limit pass
)
