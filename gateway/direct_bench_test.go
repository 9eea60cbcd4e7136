package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/thoughtbox/thoughtbox/gateway/internal/stdio"
	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
)

// BenchmarkStdioThought measures the server's side of one thought call
// over stdio, as `serve --transport stdio` runs it (memory storage; with
// direct-fs, the durable store), with the gateway's calls taken from the
// transport and, for comparison, all through the SDK: the client only
// writes request lines and reads answer lines.
func BenchmarkStdioThought(b *testing.B) {
	b.Run("direct", func(b *testing.B) { benchStdioThought(b, true, false) })
	b.Run("sdk", func(b *testing.B) { benchStdioThought(b, false, false) })
	// The durable store, as `serve` runs by default: the log's fdatasync
	// and the locks are on each call's path.
	b.Run("direct-fs", func(b *testing.B) { benchStdioThought(b, true, true) })
}

func benchStdioThought(b *testing.B, direct, durable bool) {
	open := func() (*gitstore.Store, error) { return gitstore.OpenMemory(gitstore.Options{}) }
	if durable {
		open = func() (*gitstore.Store, error) { return gitstore.Open(b.TempDir(), gitstore.Options{}) }
	}
	store, err := open()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	g := New(ledger.New(store, ledger.Options{}), Options{ThoughtLog: io.Discard})
	c := g.newConn(nil)
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	go c.runStdio(ctx, stdio.Transport{In: serverIn, Out: serverOut}, direct)
	r := bufio.NewReaderSize(clientIn, 1<<20)
	id := 0
	call := func(line string) {
		id++
		fmt.Fprintf(clientOut, line+"\n", id)
		for {
			l, err := r.ReadSlice('\n')
			if err != nil {
				b.Fatal(err)
			}
			if len(l) > 20 && string(l[:15]) == `{"jsonrpc":"2.0` && !isNotification(l) {
				return
			}
		}
	}
	call(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)
	fmt.Fprintf(clientOut, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	call(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{"operation":"start_new","args":{"sessionTitle":"bench"}}}}`)
	call(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{"operation":"cipher"}}}`)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		call(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{"operation":"thought","args":{"thought":"S1|H|a step of reasoning about the latency regression","nextThoughtNeeded":true}}}}`)
	}
}

func isNotification(line []byte) bool {
	for i := 0; i+8 < len(line) && i < 40; i++ {
		if string(line[i:i+8]) == `"method"` {
			return true
		}
	}
	return false
}
