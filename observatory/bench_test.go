package observatory_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/thoughtbox/thoughtbox/gitstore"
	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/observatory"
)

// stamp records when each thought's event was published, then hands the
// event on: delivery latency is measured from there to each subscriber.
type stamp struct {
	next ledger.EventSink
	mu   sync.Mutex
	at   map[int]time.Time
	// in is the time spent handing events to the Observatory: what a
	// writer pays for its subscribers, under the session's lock.
	in time.Duration
}

func (s *stamp) Publish(e ledger.Event) {
	if e.Node != nil {
		s.mu.Lock()
		s.at[e.Node.Data.ThoughtNumber] = time.Now()
		s.mu.Unlock()
	}
	t0 := time.Now()
	s.next.Publish(e)
	d := time.Since(t0)
	s.mu.Lock()
	s.in += d
	s.mu.Unlock()
}

// BenchmarkFanOut: one writer records 1,000 thoughts as fast as it can in
// one session while N WebSocket subscribers watch it. It reports the
// writer's throughput and the delivery latency (publish to a subscriber's
// read) at p50 and p99 over every subscriber and thought. Run:
//
//	go test ./observatory/ -run '^$' -bench FanOut -benchtime 1x
func BenchmarkFanOut(b *testing.B) {
	for _, storage := range []string{"memory", "fs"} {
		for _, subs := range []int{0, 100} {
			b.Run(fmt.Sprintf("store=%s/subscribers=%d", storage, subs), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					fanOut(b, storage, subs, 1000)
				}
			})
		}
	}
}

func fanOut(b *testing.B, storage string, subs, thoughts int) {
	var store *gitstore.Store
	var err error
	if storage == "memory" {
		store, err = gitstore.OpenMemory(gitstore.Options{})
	} else {
		store, err = gitstore.Open(b.TempDir()+"/ledger.git", gitstore.Options{})
	}
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	r := &relay{}
	st := &stamp{next: r, at: map[int]time.Time{}}
	l := ledger.New(store, ledger.Options{Events: st})
	obs := observatory.New(l, observatory.Config{MaxConnections: subs + 10})
	r.o.Store(obs)
	f := &fixture{l: l, store: store, obs: obs, ctx: context.Background()}
	f.srv = newBenchServer(b, obs)
	defer f.srv.Close()
	defer obs.Close()
	s, err := l.StartSession(f.ctx, ledger.CreateSessionParams{Title: "fan-out"}, agent)
	if err != nil {
		b.Fatal(err)
	}
	topic := "reasoning:" + s.ID

	type arrival struct {
		n  int
		at time.Time
	}
	got := make([][]arrival, subs)
	var wg sync.WaitGroup
	ready := make(chan struct{}, subs)
	for i := range subs {
		ws, _, err := websocket.DefaultDialer.Dial(f.wsURL(), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer ws.Close()
		ws.WriteJSON([]any{topic, "subscribe"})
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := []byte(`"thoughtNumber":`)
			for {
				_, data, err := ws.ReadMessage()
				if err != nil {
					return
				}
				now := time.Now()
				if bytes.Contains(data[:min(len(data), 80)], []byte(`"session:snapshot"`)) {
					ready <- struct{}{}
					continue
				}
				if !bytes.Contains(data[:min(len(data), 80)], []byte(`"thought:`)) {
					if bytes.Contains(data[:min(len(data), 80)], []byte(`"session:ended"`)) {
						return
					}
					continue
				}
				k := bytes.Index(data, key)
				if k < 0 {
					continue
				}
				rest := data[k+len(key):]
				end := bytes.IndexAny(rest, ",}")
				n, _ := strconv.Atoi(string(rest[:end]))
				got[i] = append(got[i], arrival{n, now})
			}
		}()
	}
	for range subs {
		<-ready
	}
	text := strings.Repeat("a thought of ordinary length, ", 8)
	b.ResetTimer()
	start := time.Now()
	for n := 1; n <= thoughts; n++ {
		if _, err := l.AddThought(f.ctx, s.ID, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: n < thoughts}, agent); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	wg.Wait()
	var lat []time.Duration
	for i := range got {
		if len(got[i]) != thoughts {
			b.Fatalf("subscriber %d got %d thoughts, want %d (cut off: %d)", i, len(got[i]), thoughts, obs.Dropped())
		}
		for j, a := range got[i] {
			if a.n != j+1 {
				b.Fatalf("subscriber %d: thought %d arrived as %d", i, j+1, a.n)
			}
			lat = append(lat, a.at.Sub(st.at[a.n]))
		}
	}
	b.ReportMetric(float64(thoughts)/elapsed.Seconds(), "thoughts/s")
	b.ReportMetric(float64(st.in.Nanoseconds())/float64(thoughts)/1000, "publish-µs/thought")
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
	b.ReportMetric(0, "ns/op")
}

func newBenchServer(b *testing.B, o *observatory.Observatory) *server {
	return serve(b, o)
}
