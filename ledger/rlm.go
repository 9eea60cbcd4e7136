package ledger

// RLMStatus says how a recursive language model run ended.
type RLMStatus string

// The ways an RLM run ends.
const (
	// RLMFinal: the root model gave its answer with FINAL or FINAL_VAR.
	RLMFinal RLMStatus = "final"
	// RLMIterationLimit: the run used every iteration it was allowed
	// without an answer.
	RLMIterationLimit RLMStatus = "iteration_limit"
	// RLMFailed: sampling failed part way; Error says why. What the run
	// did until then is kept, so that nothing the models wrote is lost.
	RLMFailed RLMStatus = "failed"
)

// RLMResult is the record of a recursive language model run (seed 004,
// Phase 3): a root model worked on Query in a JavaScript REPL over the
// session, asking sub-models through llm_query, until it gave an answer or
// ran out of iterations. It is stored with the thought that asked for it.
type RLMResult struct {
	Query  string    `json:"query"`
	Status RLMStatus `json:"status"`
	// Answer is the value given to FINAL or FINAL_VAR, as text.
	Answer string `json:"answer,omitempty"`
	// Error is why a failed run stopped.
	Error string `json:"error,omitempty"`
	// Model is the root model, as the client reported it.
	Model string `json:"model,omitempty"`
	// Iterations counts the root model's turns.
	Iterations int `json:"iterations"`
	// SubQueries counts llm_query calls, answered or not.
	SubQueries int `json:"subQueries"`
	// Transcript is every step of the run, in order. Long texts in it are
	// cut (and say so), so that a run cannot bloat the ledger.
	Transcript []RLMStep `json:"transcript"`
}

// RLMStepKind names a kind of step in an RLM transcript.
type RLMStepKind string

// The steps of an RLM transcript.
const (
	RLMStepRoot     RLMStepKind = "root"      // a turn of the root model
	RLMStepRepl     RLMStepKind = "repl"      // a ```repl block the server ran
	RLMStepSubQuery RLMStepKind = "sub_query" // an llm_query call
)

// RLMStep is one step of an RLM run.
type RLMStep struct {
	Kind      RLMStepKind `json:"kind"`
	Iteration int         `json:"iteration"`
	// Text is the root model's reply (root), or the sub-model's answer
	// (sub_query).
	Text string `json:"text,omitempty"`
	// Model is the model that wrote Text.
	Model string `json:"model,omitempty"`
	// Code and Output are a REPL block and what it printed (repl).
	Code   string `json:"code,omitempty"`
	Output string `json:"output,omitempty"`
	// Prompt is what llm_query asked (sub_query).
	Prompt string `json:"prompt,omitempty"`
	// Error is the exception a block threw, the interrupt that stopped
	// it, or why a sub-query failed.
	Error string `json:"error,omitempty"`
	// DurationMS is how long the step took, in milliseconds.
	DurationMS int64 `json:"durationMs"`
}
