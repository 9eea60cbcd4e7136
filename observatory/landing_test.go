package observatory_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/observatory"
)

func getJSON(t *testing.T, u string, into any) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, into); err != nil {
		t.Fatalf("GET %s: %s: %v\n%s", u, resp.Status, err, body)
	}
	return resp.StatusCode
}

// TestLandingSummary: the landing view's data names the sessions written
// to within the live window with their latest author, each recent
// session's latest thought, and the sessions started per day.
func TestLandingSummary(t *testing.T) {
	var clock time.Time
	f := newFixture(t, observatory.Config{LiveWindow: 5 * time.Minute, Now: func() time.Time {
		if clock.IsZero() {
			return time.Now()
		}
		return clock
	}})
	other := ledger.Author{Name: "second-agent", Email: "second@example.org"}
	a := f.start("Done already")
	f.add(a, ledger.ThoughtInput{Thought: "First step.", NextThoughtNeeded: true})
	f.add(a, ledger.ThoughtInput{Thought: "Closing step.", NextThoughtNeeded: false})
	b := f.start("Still going")
	if _, err := f.l.AddThought(f.ctx, b, ledger.ThoughtInput{Thought: "The second agent's thought.", NextThoughtNeeded: true}, other); err != nil {
		t.Fatal(err)
	}
	f.start("Nothing yet")

	var l observatory.Landing
	if code := getJSON(t, f.srv.URL+"/ui/landing", &l); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	if l.LiveWindowSeconds != 300 {
		t.Errorf("liveWindowSeconds = %d, want 300", l.LiveWindowSeconds)
	}
	writers := map[string]string{}
	for _, w := range l.Writers {
		writers[w.SessionID] = w.Author
	}
	if len(writers) != 2 || writers[a] != agent.Name || writers[b] != other.Name {
		t.Errorf("writers = %+v, want %s by %s and %s by %s", l.Writers, a, agent.Name, b, other.Name)
	}
	if len(l.Latest) != 2 || l.Latest[0].SessionID != b || l.Latest[0].Thought != "The second agent's thought." ||
		l.Latest[1].Thought != "Closing step." || l.Latest[1].ThoughtNumber != 2 {
		t.Errorf("latest = %+v", l.Latest)
	}
	if len(l.PerDay) != 14 || l.PerDay[13].Sessions != 3 || l.PerDay[13].Day != time.Now().UTC().Format(time.DateOnly) {
		t.Errorf("perDay = %+v, want 14 days ending today with 3", l.PerDay)
	}

	// Past the live window nobody is writing, and the latest thoughts
	// stay.
	clock = time.Now().Add(6 * time.Minute)
	l = observatory.Landing{}
	getJSON(t, f.srv.URL+"/ui/landing", &l)
	if len(l.Writers) != 0 || len(l.Latest) != 2 {
		t.Errorf("six minutes later: writers %+v, latest %d", l.Writers, len(l.Latest))
	}
}

// TestUISessions pages the session list and filters it by tag, status
// and author; a bad filter is refused naming the field.
func TestUISessions(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	other := ledger.Author{Name: "second-agent", Email: "second@example.org"}
	done := f.start("Finished work", "perf")
	f.add(done, ledger.ThoughtInput{Thought: "All done.", NextThoughtNeeded: false})
	open := f.start("Open work", "perf")
	if _, err := f.l.AddThought(f.ctx, open, ledger.ThoughtInput{Thought: "Going on.", NextThoughtNeeded: true}, other); err != nil {
		t.Fatal(err)
	}
	plain := f.start("Untagged work")
	f.add(plain, ledger.ThoughtInput{Thought: "Also going on.", NextThoughtNeeded: true})

	ids := func(q url.Values) (out []string, rows observatory.SessionRows) {
		t.Helper()
		if code := getJSON(t, f.srv.URL+"/ui/sessions?"+q.Encode(), &rows); code != http.StatusOK {
			t.Fatalf("%s: status %d", q.Encode(), code)
		}
		for _, s := range rows.Sessions {
			out = append(out, s.ID)
		}
		return out, rows
	}
	for _, c := range []struct {
		q    url.Values
		want []string
	}{
		{url.Values{}, []string{plain, open, done}},
		{url.Values{"tag": {"perf"}}, []string{open, done}},
		{url.Values{"status": {"completed"}}, []string{done}},
		{url.Values{"status": {"active"}, "tag": {"perf"}}, []string{open}},
		{url.Values{"author": {"SECOND"}}, []string{open}},
		{url.Values{"author": {"nobody"}}, nil},
	} {
		got, _ := ids(c.q)
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%s: got %v, want %v", c.q.Encode(), got, c.want)
		}
	}
	// Paging: one at a time, the next offset and hasMore lead through all.
	var all []string
	for off, n := "0", 0; n < 5; n++ {
		got, rows := ids(url.Values{"limit": {"1"}, "offset": {off}})
		all = append(all, got...)
		if !rows.HasMore {
			break
		}
		off = itoa(rows.Next)
	}
	if strings.Join(all, ",") != strings.Join([]string{plain, open, done}, ",") {
		t.Errorf("paged one by one: %v", all)
	}
	var e observatory.ErrorPayload
	for _, q := range []string{"status=finished", "limit=abc", "limit=0", "offset=-1"} {
		e = observatory.ErrorPayload{}
		if code := getJSON(t, f.srv.URL+"/ui/sessions?"+q, &e); code != http.StatusBadRequest || e.Code != ledger.CodeInvalidPayload {
			t.Errorf("%s: status %d, %+v; want 400 INVALID_PAYLOAD", q, code, e)
		}
		field := strings.SplitN(q, "=", 2)[0]
		if !strings.Contains(e.Message, field) {
			t.Errorf("%s: the error does not name %s: %q", q, field, e.Message)
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
