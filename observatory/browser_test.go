package observatory_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/thoughtbox/thoughtbox/ledger"
	"github.com/thoughtbox/thoughtbox/observatory"
)

var screenshots = flag.Bool("screenshots", false, "save the browser tests' screenshots to testdata/observatory (for the README) instead of a temporary directory")

// widths are the viewport widths every layout is checked at.
var widths = []int{360, 420, 800, 1280, 1920}

// browser is a headless Chromium tab driven by chromedp.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	if testing.Short() {
		t.Skip("drives a browser")
	}
	var chromium string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		t.Skip("Chromium is not installed (apt-get install chromium); skipping the browser test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.WindowSize(1280, 800))
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelTab(); cancelAlloc(); cancel() })
	b := &browser{t: t, ctx: tab, shots: t.TempDir()}
	if *screenshots {
		b.shots = filepath.Join("..", "testdata", "observatory")
		os.MkdirAll(b.shots, 0o755)
	}
	return b
}

func (b *browser) run(what string, actions ...chromedp.Action) {
	b.t.Helper()
	if err := chromedp.Run(b.ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) into out.
func (b *browser) eval(what, expr string, out any) {
	b.t.Helper()
	b.run(what, chromedp.Evaluate(expr, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
}

// poll waits until a JavaScript condition holds.
func (b *browser) poll(what, cond string) {
	b.t.Helper()
	b.run(what, chromedp.Poll(cond, nil, chromedp.WithPollingTimeout(15*time.Second)))
}

func (b *browser) shot(name string) {
	b.t.Helper()
	var png []byte
	b.run("screenshot "+name, chromedp.CaptureScreenshot(&png))
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// open loads the page at width × height, on a session or on the landing
// view, and waits for the socket.
func (b *browser) open(url string, width, height int) {
	b.t.Helper()
	b.run("open "+url, chromedp.EmulateViewport(int64(width), int64(height)), chromedp.Navigate("about:blank"),
		chromedp.Navigate(url), chromedp.WaitReady(`#conn.open`, chromedp.ByQuery))
}

// words make thoughts of varied lengths that read like prose.
var words = strings.Fields(`the cache misses because warm-up runs before the index is loaded so every
first read goes to the database and the p99 climbs while the pool is cold; measure it under real
traffic before deciding anything about Redis or an in-process LRU with a bounded size`)

func prose(n, length int) string {
	var sb strings.Builder
	for i := 0; sb.Len() < length; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(words[(n*7+i*3)%len(words)])
	}
	return strings.ToUpper(sb.String()[:1]) + sb.String()[1:] + "."
}

// writeSmall writes a session of 15 thoughts: ten on the main chain (the
// fourth revises the second), a branch of three from thought 3 and one of
// two from thought 7; a critique on thought 6 and, in thought 9, a file
// reference and the commit of thought 1.
func writeSmall(f *fixture) (string, int) {
	id := f.start("Why the profile cache misses after a deploy", "perf", "caching")
	main := func(n int, in ledger.ThoughtInput) *ledger.AddResult {
		if in.Thought == "" {
			in.Thought = prose(n, 40+n*23%120)
		}
		in.NextThoughtNeeded = true
		return f.add(id, in)
	}
	first := main(1, ledger.ThoughtInput{})
	main(2, ledger.ThoughtInput{Thought: "Most reads hit the same few users, so a small cache in front of the database would absorb them."})
	main(3, ledger.ThoughtInput{})
	for i := range 3 {
		main(20+i, ledger.ThoughtInput{BranchID: "redis", BranchFromThought: ptr(3)})
	}
	main(4, ledger.ThoughtInput{Thought: "Most reads hit the same few users, and profile writes are rare, so minutes of staleness are fine in front of the database.",
		IsRevision: true, RevisesThought: ptr(2)})
	for n := 5; n <= 7; n++ {
		main(n, ledger.ThoughtInput{})
	}
	for i := range 2 {
		main(30+i, ledger.ThoughtInput{BranchID: "smaller-lru-with-a-long-branch-name", BranchFromThought: ptr(7)})
	}
	main(8, ledger.ThoughtInput{})
	main(9, ledger.ThoughtInput{Thought: "The warm-up is in observatory/web/app.js:120 and came with commit " + string(first.Node.Commit())[:12] + "; see https://example.org/runbook for the rollout."})
	main(10, ledger.ThoughtInput{})
	if _, err := f.l.AddCritique(f.ctx, id, "", 6, ledger.Critique{Text: "The hit rate is assumed, not measured.", Model: "critic-1", Timestamp: time.Now()}, agent); err != nil {
		f.t.Fatal(err)
	}
	return id, 15
}

// writeLong writes a session of n thoughts: the main chain with a branch
// of five every hundred thoughts.
func writeLong(f *fixture, title string, n int) string {
	id := f.start(title, "scale")
	written := 0
	for i := 1; written < n; i++ {
		f.add(id, ledger.ThoughtInput{Thought: prose(i, 30+i*37%140), NextThoughtNeeded: true})
		written++
		if i%100 == 50 {
			for k := 0; k < 5 && written < n; k++ {
				f.add(id, ledger.ThoughtInput{Thought: prose(i+k, 60), BranchID: fmt.Sprintf("alt-%d", i), BranchFromThought: ptr(i), NextThoughtNeeded: true})
				written++
			}
		}
	}
	return id
}

// layoutProblems lists, from the DOM, the node and label boxes of the
// graph that intersect another thought's, or that lie outside the drawing
// or outside the pane's width (which needs no sideways scrolling at the
// default zoom).
const layoutProblems = `(() => {
  const host = document.querySelector("#graph");
  const svg = host.querySelector("svg.g");
  if (!svg) return ["no graph drawn"];
  const sb = svg.getBoundingClientRect();
  const hb = host.getBoundingClientRect();
  const paneLeft = hb.left + host.clientLeft, paneRight = paneLeft + host.clientWidth;
  const items = [];
  for (const n of svg.querySelectorAll(".node")) {
    const id = n.dataset.nodeId;
    items.push({id: id, what: "node", r: n.querySelector("circle.dot").getBoundingClientRect()});
    n.querySelectorAll("text.label").forEach((t, i) => items.push({id: id, what: "label line " + (i + 1), r: t.getBoundingClientRect()}));
  }
  svg.querySelectorAll(".branch-label").forEach((t) => items.push({id: "branch label " + t.textContent, what: "branch label", r: t.getBoundingClientRect()}));
  const out = [];
  const e = 0.5;
  for (const it of items) {
    const r = it.r;
    if (r.width === 0 || r.height === 0) out.push(it.id + " " + it.what + " is empty");
    if (r.left < sb.left - e || r.right > sb.right + e || r.top < sb.top - e || r.bottom > sb.bottom + e) out.push(it.id + " " + it.what + " is outside the drawing");
    if (r.left < paneLeft - e || r.right > paneRight + e) out.push(it.id + " " + it.what + " is outside the pane's width");
  }
  items.sort((a, b) => a.r.top - b.r.top);
  for (let i = 0; i < items.length; i++) {
    const a = items[i];
    for (let j = i + 1; j < items.length && items[j].r.top < a.r.bottom - e; j++) {
      const b = items[j];
      if (a.id === b.id) continue;
      if (a.r.left < b.r.right - e && b.r.left < a.r.right - e) out.push(a.id + " " + a.what + " overlaps " + b.id + " " + b.what);
    }
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1) out.push("the page scrolls sideways");
  return out.slice(0, 20);
})()`

// TestGraphLayoutAtEveryWidth opens a small session (15 thoughts, two
// branches, a revision) and a long one (300 thoughts) at widths from a
// phone's to a wide screen's and checks from the DOM that no two thoughts'
// nodes or labels overlap and that none is cut off.
func TestGraphLayoutAtEveryWidth(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	small, smallN := writeSmall(f)
	long := writeLong(f, "Three hundred thoughts on a slow rollout", 300)
	b := newBrowser(t)
	for _, s := range []struct {
		name, id string
		n        int
	}{{"small", small, smallN}, {"long", long, 300}} {
		for _, w := range widths {
			b.open(f.srv.URL+"/#session="+s.id, w, 900)
			b.poll(fmt.Sprintf("%s at %d: the graph", s.name, w), fmt.Sprintf(`state.order.length === %d && document.querySelectorAll("#graph .node").length > 0`, s.n))
			// The graph draws the thoughts near the visible part of the
			// pane: check it a screen at a time, from the top, until
			// every thought has been drawn.
			seen := map[string]bool{}
			b.eval("to the top", `(() => { const g = document.querySelector("#graph"); g.scrollTop = 0; renderGraph(); return true; })()`, nil)
			for step := 0; len(seen) < s.n && step < 400; step++ {
				var problems, ids []string
				b.eval("layout", layoutProblems, &problems)
				if len(problems) > 0 {
					t.Errorf("%s session at %d px, screen %d: %d problems, the first:\n  %s", s.name, w, step, len(problems), strings.Join(problems, "\n  "))
					break
				}
				b.eval("drawn", `[...document.querySelectorAll("#graph .node")].map((n) => n.dataset.nodeId)`, &ids)
				for _, id := range ids {
					seen[id] = true
				}
				var more bool
				b.eval("next screen", `(() => { const g = document.querySelector("#graph"); const before = g.scrollTop; g.scrollTop += g.clientHeight; renderGraph(); return g.scrollTop > before; })()`, &more)
				if !more {
					break
				}
			}
			if len(seen) != s.n {
				t.Errorf("%s session at %d px: %d of %d thoughts drawn while scrolling through", s.name, w, len(seen), s.n)
			}
			b.eval("back to the top", `(() => { const g = document.querySelector("#graph"); g.scrollTop = 0; renderGraph(); return true; })()`, nil)
			var labels []string
			b.eval("labels", `[...document.querySelectorAll("#graph .node")].map((n) => [...n.querySelectorAll("text.label")].map((t) => t.textContent).join(" / "))`, &labels)
			if s.name == "small" && !strings.Contains(strings.Join(labels, "\n"), " / ") {
				t.Errorf("at %d px no label has two lines: %q", w, labels)
			}
			if s.name == "small" || w == 1280 || w == 420 {
				b.shot(fmt.Sprintf("graph-%s-%d", s.name, w))
			}
			if s.name == "long" {
				checkMinimapAndZoom(t, b, w)
			}
		}
	}
}

// inView says whether the element of node id lies inside the visible box
// of the scrolling view that holds it.
func inView(host, id string) string {
	return fmt.Sprintf(`(() => {
  const host = document.querySelector(%q);
  const e = host.querySelector('[data-node-id=%q]');
  if (!e) return false;
  const h = host.getBoundingClientRect(), r = e.getBoundingClientRect();
  return r.top >= h.top - 1 && r.bottom <= h.top + host.clientHeight + 1 && r.left >= h.left - 1 && r.right <= h.left + host.clientWidth + 1;
})()`, host, id)
}

// TestFollowLive writes to a live session while the page watches it: the
// newest thought stays in sight as the graph grows; once the person
// scrolls away the view stays where they put it and a "newest" button
// appears, which brings the newest thought back. The reading view follows
// the same way, and the chosen view is remembered across a reload.
func TestFollowLive(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	id := writeLong(f, "A long live session", 60)
	b := newBrowser(t)
	b.open(f.srv.URL+"/#session="+id, 1280, 700)
	b.poll("the graph", `state.order.length === 60 && document.querySelectorAll("#graph .node").length > 0`)
	b.run("start in the graph view", chromedp.Click("#view-graph", chromedp.ByQuery))
	n := 60
	add := func() string {
		n++
		res := f.add(id, ledger.ThoughtInput{Thought: prose(n, 90), NextThoughtNeeded: true})
		return res.Node.ID
	}
	for range 8 {
		node := add()
		b.poll("thought "+node+" in sight", inView("#graph", node))
	}
	var hidden bool
	b.eval("newest button", `document.querySelector("#newest").hidden`, &hidden)
	if !hidden {
		t.Error("the newest button shows while the view follows")
	}

	b.eval("scroll away", `(() => { const g = document.querySelector("#graph"); g.scrollTop = 0; return new Promise((r) => setTimeout(() => r(true), 200)); })()`, nil)
	node := add()
	b.poll("the thought arrived", fmt.Sprintf(`state.order.includes(%q)`, node))
	b.poll("the newest button", `!document.querySelector("#newest").hidden`)
	var top float64
	var visible bool
	b.eval("scroll position", `document.querySelector("#graph").scrollTop`, &top)
	b.eval("newest in sight", inView("#graph", node), &visible)
	if top > 1 || visible {
		t.Errorf("after scrolling to the top, a new thought moved the view (scrollTop %v, newest in sight %v)", top, visible)
	}
	b.run("click newest", chromedp.Click("#newest", chromedp.ByQuery))
	b.poll("newest in sight after the click", inView("#graph", node))
	b.poll("the button hides", `document.querySelector("#newest").hidden`)
	node = add()
	b.poll("following again", inView("#graph", node))

	b.run("reading view", chromedp.Click("#view-read", chromedp.ByQuery))
	for range 3 {
		node = add()
		b.poll("thought "+node+" in sight in the reading view", inView("#reading", node))
	}
	b.open(f.srv.URL+"/#session="+id, 1280, 700)
	b.poll("the reading view is remembered", `document.querySelector("#view-read").getAttribute("aria-pressed") === "true" && !document.querySelector("#reading").hidden && document.querySelectorAll("#reading .para").length > 60`)
}

// TestReadingView checks the document the reading view makes of the small
// session: every thought a paragraph with number, type and time; each
// branch a thread under its fork thought; the revision a word diff; the
// critique inline; the file reference, the commit id and the URL links.
func TestReadingView(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	id, n := writeSmall(f)
	b := newBrowser(t)
	for _, w := range []int{1280, 420} {
		b.open(f.srv.URL+"/?code=https://example.org/repo#session="+id, w, 900)
		b.run("reading view", chromedp.Click("#view-read", chromedp.ByQuery))
		b.poll("paragraphs", fmt.Sprintf(`document.querySelectorAll("#reading .para").length === %d`, n))
		var doc struct {
			Heads    []string
			Threads  []string
			Ins, Del []string
			Critique string
			Links    []string
			Diff     string
		}
		b.eval("the document", `(() => ({
  heads: [...document.querySelectorAll("#reading .para header")].map((h) => h.textContent),
  threads: [...document.querySelectorAll("#reading details.thread")].map((d) => d.previousElementSibling.dataset.nodeId + " > " + d.querySelector("summary").textContent),
  ins: [...document.querySelectorAll("#reading .diff ins")].map((e) => e.textContent),
  del: [...document.querySelectorAll("#reading .diff del")].map((e) => e.textContent),
  critique: (document.querySelector("#reading .crit") || {}).textContent || "",
  links: [...document.querySelectorAll("#reading .para p a")].map((a) => a.textContent + " -> " + a.getAttribute("href")),
}))()`, &doc)
		if len(doc.Heads) != n || !strings.HasPrefix(doc.Heads[0], "1thought") && !strings.HasPrefix(doc.Heads[0], "1") {
			t.Errorf("paragraph headers: %q", doc.Heads)
		}
		wantThreads := []string{id + ":3 > Branch redis · 3 thoughts, from thought 3", id + ":7 > Branch smaller-lru-with-a-long-branch-name · 2 thoughts, from thought 7"}
		if strings.Join(doc.Threads, "|") != strings.Join(wantThreads, "|") {
			t.Errorf("threads = %q, want %q", doc.Threads, wantThreads)
		}
		if !strings.Contains(strings.Join(doc.Ins, "|"), "profile writes are rare") || !strings.Contains(strings.Join(doc.Del, "|"), "a small cache") {
			t.Errorf("the revision's diff: inserted %q, deleted %q", doc.Ins, doc.Del)
		}
		if !strings.Contains(doc.Critique, "Critique by critic-1: The hit rate is assumed") {
			t.Errorf("critique = %q", doc.Critique)
		}
		links := strings.Join(doc.Links, "\n")
		for _, want := range []string{"observatory/web/app.js:120 -> https://example.org/repo/blob/HEAD/observatory/web/app.js#L120",
			"https://example.org/runbook -> https://example.org/runbook", " -> #t-" + strings.ReplaceAll(id, "-", "-") + "-1"} {
			if !strings.Contains(links, want) {
				t.Errorf("links lack %q:\n%s", want, links)
			}
		}
		b.shot(fmt.Sprintf("reading-small-%d", w))
	}
}

// axeProblems runs axe-core (vendored in testdata/axe) on the page and
// lists its serious and critical findings.
func (b *browser) axeProblems() []string {
	b.t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "axe", "axe.min.js"))
	if err != nil {
		b.t.Fatal(err)
	}
	var ok bool
	b.eval("load axe-core", string(src)+";\ntrue", &ok)
	var out []string
	b.eval("run axe-core", `axe.run(document, {resultTypes: ["violations"]}).then((r) => r.violations
  .filter((v) => v.impact === "serious" || v.impact === "critical")
  .map((v) => v.id + " (" + v.impact + "): " + v.help + ": " + v.nodes.slice(0, 4).map((n) => n.target.join(" ") + " " + (n.failureSummary || "").replace(/\s+/g, " ")).join(" | ")))`, &out)
	return out
}

func (b *browser) colorScheme(scheme string) {
	b.t.Helper()
	b.run("prefers-color-scheme: "+scheme, emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}))
}

// TestAccessibility runs axe-core over the landing view, the graph with a
// thought selected and the reading view, in light and in dark mode, at a
// wide and a narrow width: no serious or critical finding.
func TestAccessibility(t *testing.T) {
	f := newFixture(t, observatory.Config{})
	id, n := writeSmall(f)
	b := newBrowser(t)
	for _, scheme := range []string{"light", "dark"} {
		b.colorScheme(scheme)
		for _, w := range []int{1280, 420} {
			check := func(what string) {
				t.Helper()
				if p := b.axeProblems(); len(p) > 0 {
					t.Errorf("%s, %s, %d px: axe-core finds:\n  %s", what, scheme, w, strings.Join(p, "\n  "))
				}
			}
			b.open(f.srv.URL+"/", w, 900)
			b.poll("the landing view", `document.querySelectorAll("#landing li").length >= 1`)
			check("landing view")
			if scheme == "light" {
				b.shot(fmt.Sprintf("landing-%d", w))
			}
			b.open(f.srv.URL+"/#session="+id, w, 900)
			b.run("graph view", chromedp.Click("#view-graph", chromedp.ByQuery))
			b.poll("the graph", fmt.Sprintf(`document.querySelectorAll("#graph .node").length === %d`, n))
			b.run("select thought 4", chromedp.Click(fmt.Sprintf(`[data-node-id=%q]`, id+":4"), chromedp.ByQuery))
			b.poll("the detail", `document.querySelector("#detail h3") !== null && document.querySelector("#detail").textContent.includes("test-agent")`)
			b.poll("the revision's arc", `document.querySelector("#graph .edge.revision") !== null`)
			check("graph view")
			if scheme == "dark" {
				b.shot(fmt.Sprintf("graph-selected-dark-%d", w))
			}
			b.run("reading view", chromedp.Click("#view-read", chromedp.ByQuery))
			b.poll("the document", fmt.Sprintf(`document.querySelectorAll("#reading .para").length === %d`, n))
			check("reading view")
		}
	}
}

var browserBench = flag.Bool("browserbench", false, "run TestBrowserTimings: open a 1,000-thought session and stream 100 thoughts into it, and report the page's times from the browser's performance timeline (see BENCHMARKS.md)")

// TestBrowserTimings measures, from the browser's own performance
// timeline, how long a 1,000-thought session takes to draw its graph (from
// the page's navigation, and from a click in the session list) and the
// page's frame times while 100 thoughts stream in. Run with -browserbench.
func TestBrowserTimings(t *testing.T) {
	if !*browserBench {
		t.Skip("run with -browserbench")
	}
	f := newFixture(t, observatory.Config{})
	id := writeLong(f, "A thousand thoughts", 1000)
	other := f.start("Somewhere else to click from")
	f.add(other, ledger.ThoughtInput{Thought: "A thought.", NextThoughtNeeded: true})
	b := newBrowser(t)
	var fromNav, fromClick []float64
	for range 5 {
		b.open(f.srv.URL+"/#session="+id, 1280, 800)
		b.poll("the graph", `performance.getEntriesByName("thoughtbox:graph-drawn").length === 1 && state.order.length === 1000`)
		var ms float64
		b.eval("drawn", `performance.getEntriesByName("thoughtbox:graph-drawn")[0].startTime`, &ms)
		fromNav = append(fromNav, ms)
		b.run("open the other session", chromedp.Click(fmt.Sprintf(`#live [data-session-id=%q]`, other), chromedp.ByQuery))
		b.poll("the other session", `document.querySelectorAll("#graph .node").length === 1`)
		b.run("back to the long one", chromedp.Click(fmt.Sprintf(`#live [data-session-id=%q]`, id), chromedp.ByQuery))
		b.poll("the graph again", `performance.getEntriesByName("thoughtbox:open-to-graph").length === 3 && state.order.length === 1000`)
		b.eval("open to graph", `performance.getEntriesByName("thoughtbox:open-to-graph").at(-1).duration`, &ms)
		fromClick = append(fromClick, ms)
	}
	t.Logf("1,000 thoughts, navigation to first drawn graph: %s ms", quantiles(fromNav))
	t.Logf("1,000 thoughts, click in the list to first drawn graph: %s ms", quantiles(fromClick))

	for _, pace := range []time.Duration{0, 20 * time.Millisecond} {
		b.eval("record frames", `(() => {
  window.__frames = []; window.__stop = false;
  let last = 0;
  const tick = (ts) => { if (last) window.__frames.push(ts - last); last = ts; if (!window.__stop) requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
  performance.clearMeasures("thoughtbox:render");
  return true;
})()`, nil)
		time.Sleep(300 * time.Millisecond)
		var count int
		b.eval("count", `state.order.length`, &count)
		for i := range 100 {
			f.add(id, ledger.ThoughtInput{Thought: prose(2000+i, 90), NextThoughtNeeded: true})
			time.Sleep(pace)
		}
		b.poll("all drawn", fmt.Sprintf(`state.order.length === %d && !!document.querySelector('#graph [data-node-id="' + state.order.at(-1) + '"]')`, count+100))
		time.Sleep(300 * time.Millisecond)
		var frames, renders []float64
		b.eval("frames", `(() => { window.__stop = true; return window.__frames; })()`, &frames)
		b.eval("renders", `performance.getEntriesByName("thoughtbox:render").map((e) => e.duration)`, &renders)
		t.Logf("100 thoughts streamed into %d (one every %v): frame interval %s ms over %d frames; render %s ms over %d renders",
			count, pace, quantiles(frames), len(frames), quantiles(renders), len(renders))
	}
}

// quantiles formats the median, 95th percentile and maximum of xs.
func quantiles(xs []float64) string {
	if len(xs) == 0 {
		return "(none)"
	}
	s := append([]float64(nil), xs...)
	slices.Sort(s)
	q := func(p float64) float64 { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return fmt.Sprintf("median %.1f, p95 %.1f, max %.1f", q(0.5), q(0.95), s[len(s)-1])
}

// checkMinimapAndZoom: past 100 thoughts a wide pane shows a minimap that
// moves the graph when clicked; the zoom buttons scale the drawing and
// "fit" restores it.
func checkMinimapAndZoom(t *testing.T, b *browser, w int) {
	t.Helper()
	var mm struct {
		Hidden bool
		Width  float64
	}
	b.eval("minimap", `(() => ({hidden: document.querySelector("#minimap").hasAttribute("hidden"), width: +document.querySelector("#graph svg.g").getAttribute("width")}))()`, &mm)
	if wantHidden := w < 1000; mm.Hidden != wantHidden {
		t.Errorf("at %d px the minimap's hidden is %v, want %v", w, mm.Hidden, wantHidden)
	}
	if !mm.Hidden {
		var top float64
		b.run("click the minimap's bottom", chromedp.ActionFunc(func(ctx context.Context) error {
			return chromedp.Run(ctx, chromedp.Evaluate(`(() => { const r = document.querySelector("#minimap").getBoundingClientRect();
  document.querySelector("#minimap").dispatchEvent(new MouseEvent("click", {clientX: r.left + r.width / 2, clientY: r.bottom - 2, bubbles: true})); return true; })()`, nil))
		}))
		b.eval("scrolled", `document.querySelector("#graph").scrollTop`, &top)
		if top < 1000 {
			t.Errorf("at %d px a click at the minimap's bottom scrolled the graph to %v only", w, top)
		}
	}
	var zoomed, fit float64
	b.run("zoom in", chromedp.Click("#zoom-in", chromedp.ByQuery))
	b.eval("zoomed width", `+document.querySelector("#graph svg.g").getAttribute("width")`, &zoomed)
	b.run("fit", chromedp.Click("#zoom-fit", chromedp.ByQuery))
	b.eval("fit width", `+document.querySelector("#graph svg.g").getAttribute("width")`, &fit)
	if zoomed < mm.Width*1.2 || fit != mm.Width {
		t.Errorf("at %d px: width %v, zoomed in %v, fit %v", w, mm.Width, zoomed, fit)
	}
}

// TestSessionList: the live list holds the sessions written to within the
// live window, the recent list the rest; the status and author filters
// narrow the recent list, and its rows carry their tags inside.
func TestSessionList(t *testing.T) {
	f := newFixture(t, observatory.Config{LiveWindow: 6 * time.Second})
	other := ledger.Author{Name: "second-agent", Email: "second@example.org"}
	old := f.start("Written a while ago", "perf")
	f.add(old, ledger.ThoughtInput{Thought: "Done.", NextThoughtNeeded: false})
	quiet := f.start("Quiet but open")
	if _, err := f.l.AddThought(f.ctx, quiet, ledger.ThoughtInput{Thought: "Waiting.", NextThoughtNeeded: true}, other); err != nil {
		t.Fatal(err)
	}
	written := time.Now()
	b := newBrowser(t)
	b.open(f.srv.URL+"/", 1280, 800)
	// Past the live window of the first two, a third session starts; the
	// page hears of it at once.
	time.Sleep(time.Until(written.Add(6500 * time.Millisecond)))
	fresh := f.start("Being written now")
	f.add(fresh, ledger.ThoughtInput{Thought: "Going.", NextThoughtNeeded: true})
	list := func(sel string) string {
		return fmt.Sprintf(`[...document.querySelectorAll("%s [data-session-id]")].map((e) => e.dataset.sessionId).join(",")`, sel)
	}
	b.poll("live and recent", fmt.Sprintf(`%s === %q && %s === %q`, list("#live"), fresh, list("#history"), quiet+","+old))
	var tagInside bool
	b.eval("the tag inside its row", fmt.Sprintf(`(() => { const row = document.querySelector('#history [data-session-id=%q]').closest("li");
  const tag = row.querySelector(".tag"); const r = row.getBoundingClientRect(), g = tag.getBoundingClientRect();
  return g.left >= r.left && g.right <= r.right && g.top >= r.top && g.bottom <= r.bottom; })()`, old), &tagInside)
	if !tagInside {
		t.Error("the tag of a row lies outside the row")
	}
	b.run("completed only", chromedp.SetValue("#status-filter", "completed", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#status-filter").dispatchEvent(new Event("change")); true`, nil))
	b.poll("completed only", fmt.Sprintf(`%s === %q`, list("#history"), old))
	b.run("any status", chromedp.SetValue("#status-filter", "", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelector("#status-filter").dispatchEvent(new Event("change")); true`, nil))
	b.run("author", chromedp.SendKeys("#author-filter", "second", chromedp.ByQuery))
	b.poll("by the second agent", fmt.Sprintf(`%s === %q`, list("#history"), quiet))
}
