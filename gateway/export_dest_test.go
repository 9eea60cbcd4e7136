package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway"
)

// TestExportDestination: export {destination} writes only inside the
// export folder or the connection's bound root, never elsewhere, and never
// over an existing file.
func TestExportDestination(t *testing.T) {
	exports := t.TempDir()
	root := t.TempDir()
	outside := t.TempDir()
	e := newEnv(t, gateway.Options{ExportDir: exports})
	c := e.connect(t, clientOpts{roots: []*mcp.Root{{URI: "file://" + filepath.ToSlash(root), Name: "work"}}})
	id := c.ready("exports")
	c.think("one", nil)

	export := func(dest string) result {
		return c.gw("session", map[string]any{"subOperation": "export", "sessionId": id, "format": "markdown", "destination": dest})
	}
	r := export("notes/first.md")
	if !r.isError {
		t.Fatalf("a destination in a folder that does not exist was accepted: %v", r.texts)
	}
	os.Mkdir(filepath.Join(exports, "notes"), 0o755)
	r = export("notes/first.md")
	if r.isError {
		t.Fatalf("export into the export folder: %v", r.texts)
	}
	if b, err := os.ReadFile(filepath.Join(exports, "notes", "first.md")); err != nil || !strings.Contains(string(b), "# exports") {
		t.Fatalf("exported file: %q, %v", b, err)
	}
	if r := export("notes/first.md"); !r.isError || !strings.Contains(r.texts[0], "already exists") {
		t.Fatalf("an existing file was replaced: %v", r.texts)
	}

	// Escapes are refused and write nothing.
	os.Symlink(outside, filepath.Join(exports, "link"))
	for _, dest := range []string{"../escape.md", filepath.Join(outside, "abs.md"), "link/through.md", "/etc/passwd", "notes/", "a\x00b"} {
		r := export(dest)
		if !r.isError || !strings.Contains(r.texts[0], `"field":"destination"`) {
			t.Errorf("destination %q was not refused: %v", dest, r.texts)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("files appeared outside: %v", ents)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(exports), "escape.md")); err == nil {
		t.Fatal("../escape.md was written")
	}

	// Inside the bound root, once the client's roots confirm it.
	inRoot := filepath.Join(root, "reasoning.md")
	if r := export(inRoot); !r.isError {
		t.Fatalf("a root not bound yet was accepted: %v", r.texts)
	}
	c.ok("bind_root", map[string]any{"rootUri": "file://" + filepath.ToSlash(root)})
	if r := export(inRoot); r.isError {
		t.Fatalf("export into the bound root: %v", r.texts)
	}
	if _, err := os.Stat(inRoot); err != nil {
		t.Fatal(err)
	}
}
