package gateway

import (
	"context"

	"github.com/thoughtbox/thoughtbox/gateway/content"
	"github.com/thoughtbox/thoughtbox/ledger"
)

type cipherHeader struct {
	stageInfo
	// Format and Markers are the parser's own tables, so an agent has the
	// essentials even if it skims the guide.
	Format  string            `json:"format"`
	Markers map[string]string `json:"markers"`
	Message string            `json:"message"`
}

// loadCipher returns the cipher guide (thoughtbox://cipher); the dispatch
// table advances the connection to stage 2.
func loadCipher(context.Context, *call, *noParams) (any, error) {
	guide, ok := content.Resource("cipher")
	if !ok {
		return nil, ledger.Errorf(ledger.CodeInternal, "the cipher guide is missing from this build")
	}
	markers := map[string]string{}
	for _, t := range ledger.CipherTypes() {
		markers[string(t)] = t.Name()
	}
	return &text{
		header: &cipherHeader{
			Format:  "S{n}|{type}|{refs}|{content}",
			Markers: markers,
			Message: "Cipher loaded: thought, read_thoughts, get_structure and mental_models are available.",
		},
		body: []string{guide},
	}, nil
}
