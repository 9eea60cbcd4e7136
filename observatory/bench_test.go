package observatory_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
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
// read) at p50 and p99 over every subscriber and thought. With
// clients=process the subscribers run in a child process (this test
// binary again), so that the server's cost can be told from the clients'.
// Run:
//
//	go test ./observatory/ -run '^$' -bench FanOut -benchtime 1x
func BenchmarkFanOut(b *testing.B) {
	for _, storage := range []string{"memory", "fs"} {
		for _, subs := range []int{0, 100} {
			for _, where := range []string{"inprocess", "process"} {
				if subs == 0 && where == "process" {
					continue
				}
				b.Run(fmt.Sprintf("store=%s/subscribers=%d/clients=%s", storage, subs, where), func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						fanOut(b, storage, subs, 1000, where == "process")
					}
				})
			}
		}
	}
}

// envFanOutClients, set in a child process, makes it the subscribers of
// a fan-out benchmark: "url topic subscribers thoughts".
const envFanOutClients = "THOUGHTBOX_FANOUT_CLIENTS"

// envFanOutCork, if set, is the Observatory's CorkDelay in the fan-out
// benchmark (a Go duration; -1ns disables the delay), to compare delays
// with one binary.
const envFanOutCork = "THOUGHTBOX_FANOUT_CORK"

func TestMain(m *testing.M) {
	if spec := os.Getenv(envFanOutClients); spec != "" {
		os.Exit(fanOutClients(spec))
	}
	os.Exit(m.Run())
}

type arrival struct {
	n  int
	at time.Time
}

// subscribe opens subs connections subscribed to topic; each reads until
// session:ended and records when each thought arrived. ready gets one
// value per snapshot received.
func subscribeAll(url, topic string, subs int, ready chan<- struct{}, wg *sync.WaitGroup) ([][]arrival, []*websocket.Conn, error) {
	got := make([][]arrival, subs)
	var conns []*websocket.Conn
	for i := range subs {
		ws, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			return nil, conns, err
		}
		conns = append(conns, ws)
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
				head := data[:min(len(data), 80)]
				if bytes.Contains(head, []byte(`"session:snapshot"`)) {
					ready <- struct{}{}
					continue
				}
				if !bytes.Contains(head, []byte(`"thought:`)) {
					if bytes.Contains(head, []byte(`"session:ended"`)) {
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
	return got, conns, nil
}

// fanOutClients is the child process: it subscribes, says "ready", and
// when the session ends writes each arrival as "subscriber thought
// unix-nanoseconds".
func fanOutClients(spec string) int {
	var url, topic string
	var subs, thoughts int
	if _, err := fmt.Sscan(spec, &url, &topic, &subs, &thoughts); err != nil {
		fmt.Fprintln(os.Stderr, "bad", envFanOutClients, err)
		return 2
	}
	ready := make(chan struct{}, subs)
	var wg sync.WaitGroup
	got, _, err := subscribeAll(url, topic, subs, ready, &wg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for range subs {
		<-ready
	}
	fmt.Println("ready")
	wg.Wait()
	fmt.Println("done")
	w := bufio.NewWriter(os.Stdout)
	for i := range got {
		for _, a := range got[i] {
			fmt.Fprintln(w, i, a.n, a.at.UnixNano())
		}
	}
	w.Flush()
	return 0
}

func fanOut(b *testing.B, storage string, subs, thoughts int, child bool) {
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
	cfg := observatory.Config{MaxConnections: subs + 10}
	if d := os.Getenv(envFanOutCork); d != "" {
		if cfg.CorkDelay, err = time.ParseDuration(d); err != nil {
			b.Fatalf("%s: %v", envFanOutCork, err)
		}
	}
	obs := observatory.New(l, cfg)
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

	var got [][]arrival
	var wg sync.WaitGroup
	var cmd *exec.Cmd
	var out *bufio.Reader
	if child {
		cmd = exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d %d", envFanOutClients, f.wsURL(), topic, subs, thoughts))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer cmd.Process.Kill()
		out = bufio.NewReader(stdout)
		if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
			b.Fatalf("the client process: %q %v", line, err)
		}
	} else {
		ready := make(chan struct{}, subs)
		var conns []*websocket.Conn
		got, conns, err = subscribeAll(f.wsURL(), topic, subs, ready, &wg)
		for _, c := range conns {
			defer c.Close()
		}
		if err != nil {
			b.Fatal(err)
		}
		for range subs {
			<-ready
		}
	}
	text := strings.Repeat("a thought of ordinary length, ", 8)
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for n := 1; n <= thoughts; n++ {
		if _, err := l.AddThought(f.ctx, s.ID, ledger.ThoughtInput{Thought: text, NextThoughtNeeded: n < thoughts}, agent); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	wg.Wait()
	var clientCPU time.Duration
	if child {
		if line, err := out.ReadString('\n'); err != nil || line != "done\n" {
			b.Fatalf("the client process: %q %v", line, err)
		}
	}
	// Every subscriber has had every thought (or the writer is alone):
	// the CPU this process used since the first thought is the writer's
	// and the server's whole cost, and the clients' too when they run
	// here.
	cpu := cpuTime() - cpu0
	if child {
		got = make([][]arrival, subs)
		for {
			var i, n int
			var ns int64
			if _, err := fmt.Fscanln(out, &i, &n, &ns); err != nil {
				break
			}
			got[i] = append(got[i], arrival{n, time.Unix(0, ns)})
		}
		if err := cmd.Wait(); err != nil {
			b.Fatalf("the client process: %v", err)
		}
		clientCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
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
	b.ReportMetric(float64(cpu.Microseconds())/float64(thoughts), "cpu-µs/thought")
	if child {
		b.ReportMetric(float64(clientCPU.Microseconds())/float64(thoughts), "client-cpu-µs/thought")
	}
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
