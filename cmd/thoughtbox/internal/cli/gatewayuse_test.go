package cli

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestGatewayOnlyForServing: the command line uses the MCP server only to
// serve (serve.go; the access tokens it and the Observatory check, in
// tokens.go and observatory.go; the RLM limits serve hands the gateway, in
// rlmsettings.go). Every other command — add --done writing
// a completed session's export among them — goes through project and
// export, so no other file of the package imports the gateway.
func TestGatewayOnlyForServing(t *testing.T) {
	const gw = "github.com/thoughtbox/thoughtbox/gateway"
	allowed := []string{"serve.go", "limits.go", "tokens.go", "observatory.go", "rlmsettings.go"}
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files found: %v", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if (path == gw || strings.HasPrefix(path, gw+"/")) && !slices.Contains(allowed, name) {
				t.Errorf("%s imports %s: only %v may (the CLI serves through the gateway, and does nothing else through it)", name, path, allowed)
			}
		}
	}
}
