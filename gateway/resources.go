package gateway

// Resources and resource templates (seed 000 appendix, seed 004 "Thought
// graph resources"). They are readable at any stage.

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/content"
	"github.com/thoughtbox/thoughtbox/ledger"
)

const (
	scheme       = "thoughtbox://"
	mimeMarkdown = "text/markdown"
	mimeJSON     = "application/json"
)

// staticResources are the Markdown documents of package content.
var staticResources = []struct{ name, title, description string }{
	{"init", "Getting started", "How to begin: the order of calls and what each stage unlocks."},
	{"architecture", "Architecture", "How Thoughtbox keeps reasoning: sessions, the thought graph, Git storage."},
	{"cipher", "Cipher notation", "The compact S{n}|{type}|{refs}|{content} notation the server parses."},
	{"patterns-cookbook", "Patterns cookbook", "Worked reasoning patterns: branching, revising, concluding."},
	{"session-analysis-guide", "Session analysis guide", "How to read a finished session and learn from it."},
	{"tests/thoughtbox", "Self-test: thoughts", "A behavioural test of the thought tools."},
	{"tests/knowledge", "Self-test: knowledge", "A behavioural test of the knowledge zone."},
}

func (c *conn) addResources() {
	s := c.server
	for _, r := range staticResources {
		name := r.name
		s.AddResource(&mcp.Resource{
			URI: scheme + name, Name: name, Title: r.title, Description: r.description, MIMEType: mimeMarkdown,
		}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			doc, ok := content.Resource(name)
			if !ok {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return textResource(req.Params.URI, mimeMarkdown, doc), nil
		})
	}
	s.AddResource(&mcp.Resource{
		URI: scheme + "mental-models", Name: "mental-models", Title: "Mental models",
		Description: "The directory of mental models and their tags, with each model's URI.", MIMEType: mimeJSON,
	}, readModelDirectory)

	templates := []struct {
		uri, name, description, mime string
		read                         mcp.ResourceHandler
	}{
		{"mental-models/{tag}/{model}", "mental-model", "One mental model's full prompt.", mimeMarkdown, readModel},
		{"thoughts/{sessionId}/{type}", "thoughts-by-type",
			"A session's thoughts of one cipher type: H E C Q R P O A X, or its name (hypothesis, evidence …).", mimeJSON, c.readThoughts},
		{"thoughts/{sessionId}/range/{start}-{end}", "thoughts-in-range",
			"A session's thoughts numbered start to end, on every chain, in creation order.", mimeJSON, c.readThoughts},
		{"references/{sessionId}/{thoughtNumber}", "thought-references",
			"The cipher references of a thought, and the thoughts that reference it.", mimeJSON, c.readReferences},
		{"revisions/{sessionId}/{thoughtNumber}", "thought-revisions",
			"A thought's revision chain: what it revises, what revises it, the whole chain.", mimeJSON, c.readRevisions},
	}
	for i, t := range templates {
		read := t.read
		if i > 0 {
			// Every template but the mental models reads the ledger: a
			// token must be allowed to read the connection's project.
			read = c.readScoped(read)
		}
		s.AddResourceTemplate(&mcp.ResourceTemplate{
			URITemplate: scheme + t.uri, Name: t.name, Description: t.description, MIMEType: t.mime,
		}, read)
	}
}

// readScoped refuses a resource read of the ledger that the connection's
// token may not read, as tool calls are refused (checkScope).
func (c *conn) readScoped(read mcp.ResourceHandler) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		c.mu.Lock()
		gr, project := c.grant, c.project
		c.mu.Unlock()
		if gr != nil && !gr.CanRead(project) {
			e := ledger.AsError(scopeError(gr, "read", project))
			data, _ := json.Marshal(map[string]any{"code": e.Code, "project": project})
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Message, Data: data}
		}
		return read(ctx, req)
	}
}

func textResource(uri, mime, text string) *mcp.ReadResourceResult {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: text}}}
}

func jsonResource(uri string, v any) (*mcp.ReadResourceResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return textResource(uri, mimeJSON, string(b)), nil
}

// uriParts splits a thoughtbox:// URI into its unescaped path segments.
func uriParts(uri string) []string {
	rest, ok := strings.CutPrefix(uri, scheme)
	if !ok {
		return nil
	}
	parts := strings.Split(rest, "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	return parts
}

// badURI is the error for a URI that matches a template but not its rules.
func badURI(uri, format string, args ...any) error {
	e := ledger.Errorf(ledger.CodeInvalidPayload, format, args...)
	data, _ := json.Marshal(map[string]any{"uri": uri, "code": e.Code})
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Message, Data: data}
}

type modelEntry struct {
	modelSummary
	URI string `json:"uri"`
}

func readModelDirectory(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	dir := struct {
		Models []modelEntry `json:"models"`
		Tags   []tagInfo    `json:"tags"`
		Count  int          `json:"count"`
	}{Models: []modelEntry{}, Tags: []tagInfo{}}
	for _, m := range content.Models() {
		uri := ""
		if len(m.Tags) > 0 {
			uri = scheme + "mental-models/" + m.Tags[0] + "/" + m.Name
		}
		dir.Models = append(dir.Models, modelEntry{modelSummary{m.Name, m.Title, m.Description, m.Tags}, uri})
	}
	for _, t := range content.Tags() {
		dir.Tags = append(dir.Tags, tagInfo{t.Name, t.Description})
	}
	dir.Count = len(dir.Models)
	return jsonResource(req.Params.URI, dir)
}

// readModel serves thoughtbox://mental-models/{tag}/{model}; the model must
// carry the tag.
func readModel(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	parts := uriParts(uri)
	if len(parts) != 3 {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	m, ok := content.Model(parts[2])
	if !ok || !hasTag(m.Tags, parts[1]) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return textResource(uri, mimeMarkdown, m.Content), nil
}

// graphOf loads the session a thought resource names.
func (c *conn) graphOf(ctx context.Context, uri, id string) (*ledger.Graph, error) {
	c.mu.Lock()
	cl := &call{conn: c}
	err := cl.holdCurrent(ctx)
	l := c.ledger
	c.mu.Unlock()
	defer cl.releaseAll()
	if err != nil {
		return nil, resourceError(uri, err)
	}
	full, err := l.Resolve(ctx, id)
	if err != nil {
		return nil, resourceError(uri, err)
	}
	v, err := l.View(ctx, full)
	if err != nil {
		return nil, resourceError(uri, err)
	}
	return v.Graph, nil
}

func resourceError(uri string, err error) error {
	switch ledger.CodeOf(err) {
	case ledger.CodeSessionNotFound, ledger.CodeThoughtNotFound:
		return mcp.ResourceNotFoundError(uri)
	case ledger.CodeInvalidPayload:
		return badURI(uri, "%s: %v", uri, err)
	}
	return err
}

type thoughtsResource struct {
	SessionID string               `json:"sessionId"`
	Type      ledger.CipherType    `json:"type,omitempty"`
	TypeName  string               `json:"typeName,omitempty"`
	Range     map[string]int       `json:"range,omitempty"`
	Count     int                  `json:"count"`
	Thoughts  []ledger.ThoughtNode `json:"thoughts"`
}

// readThoughts serves thoughtbox://thoughts/{sessionId}/{type} and
// thoughtbox://thoughts/{sessionId}/range/{start}-{end}.
func (c *conn) readThoughts(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	parts := uriParts(uri)
	var (
		typ        ledger.CipherType
		start, end int
	)
	switch {
	case len(parts) == 3:
		t, ok := ledger.ParseCipherType(parts[2])
		if !ok {
			return nil, badURI(uri, "unknown thought type %q: expected one of H E C Q R P O A X or their names", parts[2])
		}
		typ = t
	case len(parts) == 4 && parts[2] == "range":
		a, b, ok := strings.Cut(parts[3], "-")
		var err1, err2 error
		start, err1 = strconv.Atoi(a)
		end, err2 = strconv.Atoi(b)
		if !ok || err1 != nil || err2 != nil || start < 1 || end < start {
			return nil, badURI(uri, "range %q: expected {start}-{end} with 1 <= start <= end", parts[3])
		}
	default:
		return nil, mcp.ResourceNotFoundError(uri)
	}
	g, err := c.graphOf(ctx, uri, parts[1])
	if err != nil {
		return nil, err
	}
	r := thoughtsResource{SessionID: g.SessionID(), Thoughts: []ledger.ThoughtNode{}}
	if typ != "" {
		r.Type, r.TypeName = typ, typ.Name()
		for _, n := range g.Nodes() {
			if n.Cipher != nil && n.Cipher.Type == typ {
				r.Thoughts = append(r.Thoughts, n)
			}
		}
	} else {
		r.Range = map[string]int{"start": start, "end": end}
		r.Thoughts = inRange(g, start, end)
	}
	r.Count = len(r.Thoughts)
	return jsonResource(uri, r)
}

// thoughtAt parses {sessionId}/{thoughtNumber} and finds the thought: on
// the main chain, else the first branch that has the number.
func (c *conn) thoughtAt(ctx context.Context, uri string) (*ledger.Graph, ledger.ThoughtNode, error) {
	parts := uriParts(uri)
	if len(parts) != 3 {
		return nil, ledger.ThoughtNode{}, mcp.ResourceNotFoundError(uri)
	}
	n, err := strconv.Atoi(parts[2])
	if err != nil || n < 1 {
		return nil, ledger.ThoughtNode{}, badURI(uri, "thought number %q: expected an integer of at least 1", parts[2])
	}
	g, err := c.graphOf(ctx, uri, parts[1])
	if err != nil {
		return nil, ledger.ThoughtNode{}, err
	}
	nodes, err := selectThoughts(g, &readThoughtsParams{ThoughtNumber: &n})
	if err != nil {
		return nil, ledger.ThoughtNode{}, resourceError(uri, err)
	}
	return g, nodes[0], nil
}

type nodeRef struct {
	NodeID        string            `json:"nodeId"`
	ThoughtNumber int               `json:"thoughtNumber"`
	BranchID      ledger.BranchID   `json:"branchId,omitempty"`
	Type          ledger.CipherType `json:"type,omitempty"`
}

func refOf(n ledger.ThoughtNode) nodeRef {
	r := nodeRef{NodeID: n.ID, ThoughtNumber: n.Data.ThoughtNumber, BranchID: n.BranchID}
	if n.Cipher != nil {
		r.Type = n.Cipher.Type
	}
	return r
}

func (c *conn) readReferences(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	g, n, err := c.thoughtAt(ctx, uri)
	if err != nil {
		return nil, err
	}
	r := struct {
		SessionID    string             `json:"sessionId"`
		Thought      nodeRef            `json:"thought"`
		Cipher       *ledger.CipherInfo `json:"cipher"`
		References   []ledger.CipherRef `json:"references"`
		ReferencedBy []nodeRef          `json:"referencedBy"`
	}{SessionID: g.SessionID(), Thought: refOf(n), Cipher: n.Cipher, References: []ledger.CipherRef{}, ReferencedBy: []nodeRef{}}
	if n.Cipher != nil {
		r.References = n.Cipher.Refs
	}
	for _, id := range g.ReferencedBy(n.ID) {
		if m, ok := g.Node(id); ok {
			r.ReferencedBy = append(r.ReferencedBy, refOf(m))
		}
	}
	return jsonResource(uri, r)
}

func (c *conn) readRevisions(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	g, n, err := c.thoughtAt(ctx, uri)
	if err != nil {
		return nil, err
	}
	info, ok := g.Revision(n.ID)
	if !ok {
		return nil, errors.New("revision index lost a node") // unreachable: n came from g
	}
	r := struct {
		SessionID       string               `json:"sessionId"`
		Thought         nodeRef              `json:"thought"`
		Revises         *string              `json:"revises"`
		RevisedBy       []string             `json:"revisedBy"`
		RevisionDepth   int                  `json:"revisionDepth"`
		RevisionChainID string               `json:"revisionChainId"`
		Chain           []ledger.ThoughtNode `json:"chain"`
	}{SessionID: g.SessionID(), Thought: refOf(n), RevisedBy: info.RevisedBy, RevisionDepth: info.RevisionDepth,
		RevisionChainID: info.RevisionChainID, Chain: []ledger.ThoughtNode{}}
	if r.RevisedBy == nil {
		r.RevisedBy = []string{}
	}
	if n.RevisesNode != "" {
		r.Revises = &n.RevisesNode
	}
	for _, m := range g.Nodes() {
		if ri, ok := g.Revision(m.ID); ok && ri.RevisionChainID == info.RevisionChainID {
			r.Chain = append(r.Chain, m)
		}
	}
	return jsonResource(uri, r)
}
