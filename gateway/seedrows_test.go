package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/thoughtbox/thoughtbox/gateway"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// TestCipherExportIDs is issue 33's repro through MCP: a thought whose
// text calls itself S5 while it is thought 2 must not make the export
// repeat S5. Every line of the export, read back by the cipher parser,
// has its thought number as its step id; the agent's own id is the
// line's alias; a revision written in plain words exports as type R.
func TestCipherExportIDs(t *testing.T) {
	e := newEnv(t, gateway.Options{})
	c := e.connect(t, clientOpts{})
	c.ready("dup")
	for _, text := range []string{"S1|O|a", "S5|H|S1|b", "c", "d", "e"} {
		c.think(text, nil)
	}
	c.think("e, said better", map[string]any{"isRevision": true, "revisesThought": 5})
	ex := c.gw("session", map[string]any{"subOperation": "export", "format": "cipher"})
	if ex.isError {
		t.Fatalf("cipher export: %v", ex.texts)
	}
	var steps []string
	for _, line := range strings.Split(strings.Join(ex.texts, "\n"), "\n") {
		if !strings.HasPrefix(line, "S") {
			continue
		}
		info, ok := ledger.ParseCipher(line)
		if !ok {
			steps = append(steps, "plain:"+strings.SplitN(line, "|", 2)[0])
			continue
		}
		steps = append(steps, fmt.Sprintf("S%d=%d:%s", info.Step, info.Alias, info.Type))
	}
	want := []string{"S1=0:O", "S2=5:H", "plain:S3", "plain:S4", "plain:S5", "S6=0:R"}
	if diff := cmp.Diff(want, steps); diff != "" {
		t.Errorf("export lines as the parser reads them (-want +got):\n%s\n%s", diff, ex.texts)
	}
}
