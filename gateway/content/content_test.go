package content

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// The catalog of seed 000's appendix: id → tags, in order.
var wantCatalog = []struct {
	name, title string
	tags        []string
}{
	{"rubber-duck", "Rubber Duck Debugging", []string{"debugging"}},
	{"five-whys", "Five Whys", []string{"debugging", "problem-solving"}},
	{"pre-mortem", "Pre-Mortem Analysis", []string{"planning", "risk-management"}},
	{"steelmanning", "Steelmanning", []string{"decision-making"}},
	{"fermi-estimation", "Fermi Estimation", []string{"planning", "analysis"}},
	{"trade-off-matrix", "Trade-off Matrix", []string{"decision-making"}},
	{"decomposition", "Problem Decomposition", []string{"planning", "problem-solving"}},
	{"inversion", "Inversion", []string{"decision-making", "risk-management"}},
	{"abstraction-laddering", "Abstraction Laddering", []string{"problem-solving", "analysis"}},
	{"constraint-relaxation", "Constraint Relaxation", []string{"problem-solving"}},
	{"assumption-surfacing", "Assumption Surfacing", []string{"analysis"}},
	{"adversarial-thinking", "Adversarial Thinking", []string{"risk-management"}},
	{"time-horizon-shifting", "Time Horizon Shifting", []string{"planning", "decision-making"}},
	{"impact-effort-grid", "Impact-Effort Grid", []string{"planning", "decision-making"}},
	{"opportunity-cost", "Opportunity Cost", []string{"decision-making"}},
}

var wantTags = []string{"debugging", "planning", "decision-making", "risk-management", "problem-solving", "analysis"}

func TestModelsMatchCatalog(t *testing.T) {
	ms := Models()
	if len(ms) != len(wantCatalog) {
		t.Fatalf("Models() has %d models, want %d", len(ms), len(wantCatalog))
	}
	idRE := regexp.MustCompile(`^[a-z-]+$`)
	allowed := map[string]bool{}
	for _, tg := range wantTags {
		allowed[tg] = true
	}
	seen := map[string]bool{}
	for i, m := range ms {
		w := wantCatalog[i]
		if m.Name != w.name || m.Title != w.title || strings.Join(m.Tags, ",") != strings.Join(w.tags, ",") {
			t.Errorf("model %d = %s %q %v, want %s %q %v", i, m.Name, m.Title, m.Tags, w.name, w.title, w.tags)
		}
		if !idRE.MatchString(m.Name) {
			t.Errorf("model name %q does not match %s", m.Name, idRE)
		}
		if seen[m.Name] {
			t.Errorf("model name %q appears twice", m.Name)
		}
		seen[m.Name] = true
		for _, tg := range m.Tags {
			if !allowed[tg] {
				t.Errorf("model %s has tag %q, not one of %v", m.Name, tg, wantTags)
			}
		}
		if strings.TrimSpace(m.Description) == "" {
			t.Errorf("model %s has no description", m.Name)
		}
		if n := len(strings.Fields(m.Content)); n < 200 {
			t.Errorf("model %s has %d words of content, want at least 200", m.Name, n)
		}
		if !strings.HasPrefix(m.Content, "# "+m.Title+"\n") {
			t.Errorf("model %s content does not start with its title heading", m.Name)
		}
		for _, section := range []string{"## When to reach for it", "## Steps", "## Recording it in Thoughtbox", "## Worked example", "## Pitfalls"} {
			if !strings.Contains(m.Content, section) {
				t.Errorf("model %s lacks section %q", m.Name, section)
			}
		}
	}
}

func TestEveryModelFileIsCatalogued(t *testing.T) {
	entries, err := fs.ReadDir(files, "models")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(catalog) {
		t.Errorf("models/ holds %d files, catalog has %d entries", len(entries), len(catalog))
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".md")
		if _, ok := Model(name); !ok {
			t.Errorf("models/%s is not in the catalog", e.Name())
		}
	}
}

func TestModelLookup(t *testing.T) {
	m, ok := Model("five-whys")
	if !ok || m.Name != "five-whys" || m.Content == "" {
		t.Fatalf(`Model("five-whys") = %q, %v`, m.Name, ok)
	}
	if _, ok := Model("no-such-model"); ok {
		t.Error(`Model("no-such-model") reported found`)
	}
	// Callers get copies: changing one must not change the package's data.
	m.Tags[0] = "changed"
	Models()[0].Tags[0] = "changed"
	if again, _ := Model("five-whys"); again.Tags[0] != "debugging" {
		t.Errorf("Model's tags changed through a returned copy: %v", again.Tags)
	}
	if Models()[0].Tags[0] != "debugging" {
		t.Error("Models' tags changed through a returned copy")
	}
}

func TestTags(t *testing.T) {
	tg := Tags()
	if len(tg) != len(wantTags) {
		t.Fatalf("Tags() has %d tags, want %d", len(tg), len(wantTags))
	}
	used := map[string]bool{}
	for _, m := range Models() {
		for _, x := range m.Tags {
			used[x] = true
		}
	}
	for i, x := range tg {
		if x.Name != wantTags[i] {
			t.Errorf("tag %d = %q, want %q", i, x.Name, wantTags[i])
		}
		if len(strings.Fields(x.Description)) < 8 {
			t.Errorf("tag %s: description too short: %q", x.Name, x.Description)
		}
		if !used[x.Name] {
			t.Errorf("tag %s is used by no model", x.Name)
		}
	}
}

func TestResources(t *testing.T) {
	must := map[string][]string{
		"init":                   {"get_state", "start_new", "load_context", "cipher", "thought", "STAGE_REQUIREMENT_NOT_MET", "| 3 |", "run_cell", "THOUGHTBOX_NOTEBOOK_TIMEOUT"},
		"architecture":           {"refs/heads/sessions/<sessionId>/main", "branches/<branchId>", "manifest.json", "Thoughtbox-Session", "Thoughtbox-Thought", "Thoughtbox-Branch", "Thoughtbox-Revises", "write-ahead log", "git log", "git diff", "refs/heads/notebooks/<notebookId>", "Thoughtbox-Notebook"},
		"cipher":                 {"S{n}|{type}|{refs}|{content}", "[S4]", "^[S4]", "S2,S4,S7", "plain text"},
		"patterns-cookbook":      {"branchFromThought", "isRevision", "\"thoughtNumber\": 5", "critique", "nextThoughtNeeded\": false"},
		"session-analysis-guide": {"linearityScore", "revisionRate", "maxDepth", "thoughtDensity", "hasConvergence", "convergenceRate"},
		"tests/thoughtbox":       {"Step 1.", "read_thoughts", "get_structure", "load_context", "Expect"},
		"tests/knowledge":        {"Step 1.", "write_note", "list_tags", "Expect"},
	}
	for _, name := range resourceNames {
		s, ok := Resource(name)
		if !ok || len(strings.Fields(s)) < 300 {
			t.Errorf("Resource(%q): ok=%v, %d words", name, ok, len(strings.Fields(s)))
			continue
		}
		if !strings.HasPrefix(s, "# ") {
			t.Errorf("Resource(%q) does not start with a heading", name)
		}
		for _, w := range must[name] {
			if !strings.Contains(s, w) {
				t.Errorf("Resource(%q) does not mention %q", name, w)
			}
		}
	}
	if len(must) != len(resourceNames) {
		t.Errorf("test covers %d resources, package has %d", len(must), len(resourceNames))
	}
	for _, bad := range []string{"", "nope", "tests", "../content.go", "models/five-whys", "init.md"} {
		if _, ok := Resource(bad); ok {
			t.Errorf("Resource(%q) reported found", bad)
		}
	}
}

func TestCipherGuideCoversProtocol(t *testing.T) {
	s, _ := Resource("cipher")
	for _, marker := range []string{"H", "E", "C", "Q", "R", "P", "O", "A", "X"} {
		if !strings.Contains(s, "| `"+marker+"` |") {
			t.Errorf("cipher guide has no table row for marker %s", marker)
		}
	}
	for _, op := range []string{"→", "←", "∴", "∵", "∧", "∨", "¬", "⊕", "⊖"} {
		if !strings.Contains(s, "| `"+op+"` |") {
			t.Errorf("cipher guide has no table row for operator %s", op)
		}
	}
}

func TestPromptsList(t *testing.T) {
	want := []string{"list_mcp_assets", "interleaved-thinking", "subagent-summarize", "evolution-check", "test-thoughtbox", "test-memory"}
	ps := Prompts()
	if len(ps) != len(want) {
		t.Fatalf("Prompts() has %d prompts, want %d", len(ps), len(want))
	}
	for i, p := range ps {
		if p.Name != want[i] {
			t.Errorf("prompt %d = %q, want %q", i, p.Name, want[i])
		}
		if p.Description == "" || p.Render == nil {
			t.Errorf("prompt %s lacks a description or renderer", p.Name)
		}
		for _, a := range p.Args {
			if a.Name == "" || a.Description == "" {
				t.Errorf("prompt %s has an argument without name or description: %+v", p.Name, a)
			}
		}
	}
}

func prompt(t *testing.T, name string) Prompt {
	t.Helper()
	for _, p := range Prompts() {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no prompt %q", name)
	return Prompt{}
}

func TestPromptsRender(t *testing.T) {
	full := map[string]string{
		"task": "Find why the nightly build is slow", "tools": "bash, grep",
		"sessionId": "3f6c2a", "focus": "open questions",
		"newInsight": "The cache was never the bottleneck",
	}
	tests := []struct {
		name string
		want []string // substrings of the rendering with every argument given
	}{
		// The operations by stage come from the gateway's table, which puts
		// them where OperationsMarker stands (TestListAssetsPromptStages).
		{"list_mcp_assets", []string{"thoughtbox_gateway", "get_state", OperationsMarker, "thoughtbox://cipher", "thoughtbox://revisions/{sessionId}/{thoughtNumber}", "`subagent-summarize`", "argument `sessionId` (required)", "`opportunity-cost`", "`thoughtbox_notebook`"}},
		{"interleaved-thinking", []string{"Task: Find why the nightly build is slow", "Tools you expect to use: bash, grep", "start_new"}},
		{"subagent-summarize", []string{"Session: 3f6c2a", "Focus: open questions", "read_thoughts"}},
		{"evolution-check", []string{"New insight: The cache was never the bottleneck", "Session to check: 3f6c2a", "revisesThought"}},
		{"test-thoughtbox", []string{"Self-test: the thought tools", "Step 25."}},
		{"test-memory", []string{"Self-test: the knowledge zone", "write_note"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := prompt(t, tc.name).Render(full)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("rendering lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "<no value>") || strings.Contains(out, "{{") {
				t.Errorf("rendering has template residue:\n%s", out)
			}
		})
	}
}

func TestPromptOptionalArgsMayBeOmitted(t *testing.T) {
	out, err := prompt(t, "evolution-check").Render(map[string]string{"newInsight": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "the active session") {
		t.Errorf("without sessionId the prompt should target the active session:\n%s", out)
	}
	out, err = prompt(t, "subagent-summarize").Render(map[string]string{"sessionId": "abc"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "Focus:") {
		t.Errorf("without focus the prompt should not mention one:\n%s", out)
	}
	for _, name := range []string{"list_mcp_assets", "test-thoughtbox", "test-memory"} {
		if _, err := prompt(t, name).Render(nil); err != nil {
			t.Errorf("%s with no arguments: %v", name, err)
		}
	}
}

func TestPromptMissingRequiredArg(t *testing.T) {
	for _, p := range Prompts() {
		for _, a := range p.Args {
			if !a.Required {
				continue
			}
			args := map[string]string{"task": "t", "sessionId": "s", "newInsight": "n"}
			for _, v := range []string{"", "   "} {
				args[a.Name] = v
				if v == "" {
					delete(args, a.Name)
				}
				_, err := p.Render(args)
				if err == nil {
					t.Errorf("%s without %s (%q): no error", p.Name, a.Name, v)
					continue
				}
				if !strings.Contains(err.Error(), a.Name) {
					t.Errorf("%s without %s: error %q does not name the argument", p.Name, a.Name, err)
				}
			}
		}
	}
	want := map[string]string{"interleaved-thinking": "task", "subagent-summarize": "sessionId", "evolution-check": "newInsight"}
	for name, arg := range want {
		found := false
		for _, a := range prompt(t, name).Args {
			found = found || (a.Name == arg && a.Required)
		}
		if !found {
			t.Errorf("prompt %s: %s is not a required argument", name, arg)
		}
	}
}
