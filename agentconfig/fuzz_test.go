package agentconfig

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzMergeTOML: whatever the file, the merge fails cleanly or keeps every
// byte it does not own (an append leaves the file as its prefix), and a
// second merge of its result changes nothing.
func FuzzMergeTOML(f *testing.F) {
	for _, s := range []string{codexFile, "", "a = 1", "[mcp_servers.thoughtbox]\ncommand = 'x'\n", "[mcp_servers.thoughtbox]\nargs = [\n'mcp', # c\n]\n[x]\n", "t = 1979-05-27 07:32:00Z\ns = '''\n[a]\n'''\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, o, err := mergeTOML(data, "mcp_servers", "thoughtbox", plain)
		if err != nil {
			return
		}
		if o == Added && !bytes.HasPrefix(out, data) {
			t.Fatalf("an append changed the file's bytes:\n%q\n%q", data, out)
		}
		again, o2, err := mergeTOML(out, "mcp_servers", "thoughtbox", plain)
		if err != nil || o2 != Unchanged || !bytes.Equal(again, out) {
			t.Fatalf("second merge: %v, %v\n%q\n%q", o2, err, data, out)
		}
	})
}

// FuzzMergeJSON: the merge fails cleanly or writes JSON holding our entry,
// and a second merge changes nothing.
func FuzzMergeJSON(f *testing.F) {
	for _, s := range []string{"", "{}", `{"mcpServers": {"other": {"command": "x"}}, "k": [1, {"a": null}]}`, `{"mcpServers": {"thoughtbox": {"command": "old", "env": {}}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, _, err := mergeJSON(data, "mcpServers", "thoughtbox", plain)
		if err != nil {
			return
		}
		var v struct {
			MCPServers map[string]struct {
				Command string
				Args    []string
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("result is not JSON: %v\n%q", err, out)
		}
		if e := v.MCPServers["thoughtbox"]; e.Command != "thoughtbox" || len(e.Args) != 1 || e.Args[0] != "mcp" {
			t.Fatalf("entry %+v\n%q", e, out)
		}
		again, o, err := mergeJSON(out, "mcpServers", "thoughtbox", plain)
		if err != nil || o != Unchanged || !bytes.Equal(again, out) {
			t.Fatalf("second merge: %v, %v\n%q", o, err, out)
		}
	})
}
