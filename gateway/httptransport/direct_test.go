package httptransport_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/thoughtbox/thoughtbox/gateway/httptransport"
	"github.com/thoughtbox/thoughtbox/gateway/internal/direct"
)

// directSample answers the fixture's echo and sample tools without the
// SDK, as the gateway's direct path answers its tool: sample sends a
// progress notification and a sampling request during the call, which
// must reach the client on the call's own response.
func directSample(taken *atomic.Int32) httptransport.Direct {
	return func(ss *mcp.ServerSession, req *jsonrpc.Request) direct.Func {
		if ss == nil || ss.InitializeParams() == nil || req.Method != "tools/call" {
			return nil
		}
		var p struct {
			Meta      mcp.Meta `json:"_meta"`
			Name      string   `json:"name"`
			Arguments textArgs `json:"arguments"`
		}
		if json.Unmarshal(req.Params, &p) != nil || (p.Name != "echo" && p.Name != "sample") {
			return nil
		}
		taken.Add(1)
		return func(ctx context.Context) (any, error) {
			if p.Name == "echo" {
				return reply("echo: " + p.Arguments.Text), nil
			}
			if tok := p.Meta["progressToken"]; tok != nil {
				if err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "asking the model"}); err != nil {
					return nil, err
				}
			}
			res, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: p.Arguments.Text}}}})
			if err != nil {
				return nil, err
			}
			return reply("model said: " + res.Content.(*mcp.TextContent).Text), nil
		}
	}
}

// TestDirectConformsToSDKHandler runs the conformance script with the
// echo and sample calls taken by a Direct hook: the SDK's client must see
// what it sees of the SDK's handler, sampling and progress included.
func TestDirectConformsToSDKHandler(t *testing.T) {
	theirs := newFixture()
	sdk := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return theirs.server() }, nil))
	defer sdk.Close()
	mine := newFixture()
	var taken atomic.Int32
	h := httptransport.NewDirect(func(*http.Request) (*mcp.Server, httptransport.Direct) {
		return mine.server(), directSample(&taken)
	}, httptransport.Options{ProtocolVersions: versions})
	ours := httptest.NewServer(h)
	defer ours.Close()
	want := script(t, sdk.URL)
	got := script(t, ours.URL)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("transcripts differ:\nSDK handler: %+v\nours:        %+v", want, got)
	}
	if n := taken.Load(); n != 2 {
		t.Errorf("the hook took %d calls, want 2 (echo and sample)", n)
	}
	if want.Sample == "" || len(want.Progress) == 0 {
		t.Errorf("the script saw no sampling or progress: %+v", want)
	}
	h.Close()
	if n := h.Sessions(); n != 0 {
		t.Errorf("%d sessions left after Close", n)
	}
}
