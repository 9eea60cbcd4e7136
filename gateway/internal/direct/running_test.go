package direct

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestRunningCallsRunSideBySide: a call is never queued behind another
// still under way, and every call is answered with its own id.
func TestRunningCallsRunSideBySide(t *testing.T) {
	var r Running
	ctx := context.Background()
	answers := make(chan *jsonrpc.Response, 4)
	answer := func(resp *jsonrpc.Response) { answers <- resp }
	id := func(n int64) jsonrpc.ID {
		v, err := jsonrpc.MakeID(float64(n))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	release := make(chan struct{})
	r.Go(ctx, id(1), func(context.Context) (any, error) {
		<-release
		return "first", nil
	}, answer)
	quick := func(n int64) {
		t.Helper()
		r.Go(ctx, id(n), func(context.Context) (any, error) { return n, nil }, answer)
		resp := <-answers // the first call is still blocked: this is n's
		if resp.ID != id(n) || resp.Error != nil {
			t.Fatalf("call %d: answered %v, error %v", n, resp.ID, resp.Error)
		}
	}
	quick(2)
	quick(3)
	close(release)
	if resp := <-answers; resp.ID != id(1) || string(resp.Result) != `"first"` {
		t.Fatalf("the blocked call answered %v %s", resp.ID, resp.Result)
	}
	quick(4)
}
