//go:build unix

package observatory_test

import (
	"context"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/observatory"
)

// BenchmarkSubscribeFlood is issue 31's subscription flood: a session of
// about 10 MB (300 thoughts of 32 KiB), FLOOD_CLIENTS clients (default 4)
// that subscribe to it again every 20 ms and never read, and an agent
// writing short thoughts to the same session for FLOOD_SECONDS (default
// 5). It reports the agent's writes, their latency (p50, p99), the peak
// Go heap (sampled every 10 ms) and the process's peak resident size
// (VmHWM; run one sub-benchmark per process for a clean figure):
//
//	go test ./observatory -run - -bench SubscribeFlood -benchtime 1x
func BenchmarkSubscribeFlood(b *testing.B) {
	clients, seconds := 4, 5
	if n, err := strconv.Atoi(os.Getenv("FLOOD_CLIENTS")); err == nil {
		clients = n
	}
	if n, err := strconv.Atoi(os.Getenv("FLOOD_SECONDS")); err == nil {
		seconds = n
	}
	store, err := gitstore.OpenMemory(gitstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	r := &relay{}
	l := ledger.New(store, ledger.Options{Events: r})
	obs := observatory.New(l, observatory.Config{})
	r.o.Store(obs)
	srv := serve(b, obs)
	defer func() { obs.Close(); srv.Close() }()
	ctx := context.Background()
	s, err := l.StartSession(ctx, ledger.CreateSessionParams{Title: "big"}, agent)
	if err != nil {
		b.Fatal(err)
	}
	big := strings.Repeat("z", 32<<10)
	for range 300 {
		if _, err := l.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: big, NextThoughtNeeded: true}, agent); err != nil {
			b.Fatal(err)
		}
	}
	topic := "reasoning:" + s.ID
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	d := websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
		nd := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			return c.Control(func(fd uintptr) { smallReceiveBuffer(fd) })
		}}
		return nd.Dial(network, addr)
	}}
	for range clients {
		ws, _, err := d.Dial(url, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer ws.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				ws.SetWriteDeadline(time.Now().Add(time.Second))
				if ws.WriteJSON([]string{topic, "subscribe"}) != nil {
					return // cut off
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
	}
	var peakHeap uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peakHeap = max(peakHeap, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	b.ResetTimer()
	var lat []time.Duration
	end := time.Now().Add(time.Duration(seconds) * time.Second)
	for time.Now().Before(end) {
		t0 := time.Now()
		if _, err := l.AddThought(ctx, s.ID, ledger.ThoughtInput{Thought: "a short thought", NextThoughtNeeded: true}, agent); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat)), "writes")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(vmHWM())/(1<<10), "peak-RSS-MiB")
	b.ReportMetric(float64(obs.Dropped()), "cut-off")
	b.ReportMetric(0, "ns/op")
}

// vmHWM is the process's peak resident size in KiB (Linux), 0 elsewhere.
func vmHWM() int {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}
