package observatory_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/thoughtbox/thoughtbox/coderepo"
	"github.com/thoughtbox/thoughtbox/observatory"
)

// TestCodePagesInTheBrowser opens the Observatory of a real code
// repository whose commit names a session: the session's detail lists its
// code references and the linked commit; Enter on that commit opens the
// commit page, which shows the session's conclusion and what was tried;
// the file page shows each line range with its commit and session, and
// the session's link leads back to the session. axe-core finds nothing
// serious on either page, light or dark, wide or narrow. A standalone
// ledger's page shows none of it.
func TestCodePagesInTheBrowser(t *testing.T) {
	f := newCodeFixture(t, observatory.Config{})
	sid, commit := f.reasonedCommit()
	b := newBrowser(t)

	t.Run("session detail", func(t *testing.T) {
		b.t = t // the browser reports failures to the subtest
		b.open(f.srv.URL+"/#session="+sid, 1280, 800)
		b.run("reading view", chromedp.Click("#view-read", chromedp.ByQuery))
		b.poll("the linked commit", fmt.Sprintf(`document.querySelector('#detail .linked a.sha[href="#commit=%s"]') !== null`, commit))
		b.run("select thought 2", chromedp.Click(fmt.Sprintf(`#reading [data-node-id=%q]`, sid+":2"), chromedp.ByQuery))
		b.poll("its code reference", `[...document.querySelectorAll("#detail .coderefs a")].some((a) => a.getAttribute("href") === "#file=lib.go&from=3&to=4" && a.textContent === "lib.go:3-4")`)
		b.poll("the linked commit still listed", `document.querySelector("#detail .linked li").textContent.includes("Retry with exponential backoff")`)
		b.shot("code-session-detail-1280")
		// A commit made while the page is open shows once the list is
		// read again (on a selection or a new thought, past its ten
		// seconds, which the test lets pass at once).
		f.write("notes.md", "Backoff: see lib.go.\n")
		later := f.commit("Note the backoff", coderepo.SessionTrailer+": "+sid)
		b.eval("let the ten seconds pass", `(() => { state.linkedAt = 0; return true; })()`, nil)
		b.run("select thought 1", chromedp.Click(fmt.Sprintf(`#reading [data-node-id=%q]`, sid+":1"), chromedp.ByQuery))
		b.poll("the later commit", fmt.Sprintf(`document.querySelectorAll("#detail .linked li").length === 2 && document.querySelector('#detail .linked a.sha[href="#commit=%s"]') !== null`, later))
		b.run("Enter on the linked commit", chromedp.Focus(fmt.Sprintf(`#detail .linked a.sha[href="#commit=%s"]`, commit), chromedp.ByQuery), chromedp.KeyEvent(kb.Enter))
		b.poll("the commit page", fmt.Sprintf(`location.hash === "#commit=%s" && !document.querySelector("#codepage").hidden && document.querySelector("#codepage .why") !== null`, commit))
	})

	t.Run("commit page", func(t *testing.T) {
		b.t = t // the browser reports failures to the subtest
		for _, scheme := range []string{"light", "dark"} {
			b.colorScheme(scheme)
			for _, w := range []int{1280, 420} {
				b.open(f.srv.URL+"/#commit="+commit[:12], w, 900)
				b.poll("the commit page", `document.querySelector("#codepage .why .concl") !== null`)
				var page struct {
					Title, Conclusion, Session, Touching, Tried string
					Landing                                     bool
				}
				b.eval("the page", `(() => ({
  title: document.querySelector("#codepage h2").textContent,
  conclusion: document.querySelector("#codepage .concl").textContent,
  session: document.querySelector("#codepage .why h3 a").getAttribute("href"),
  touching: document.querySelector("#codepage .why .thoughts").textContent,
  tried: document.querySelector("#codepage .tried summary").textContent,
  landing: !document.querySelector("#landing").hidden,
}))()`, &page)
				if page.Title != "Commit "+commit[:10] || page.Conclusion != "Conclusion (thought 3): Conclusion: exponential backoff with jitter, capped at a minute." ||
					page.Session != "#session="+sid || !strings.Contains(page.Touching, "Retry in lib.go should wait longer") ||
					!strings.HasPrefix(page.Tried, "Tried on branch fixed-delay") || page.Landing {
					t.Errorf("%s, %d px: %+v", scheme, w, page)
				}
				if p := b.axeProblems(); len(p) > 0 {
					t.Errorf("commit page, %s, %d px: axe-core finds:\n  %s", scheme, w, strings.Join(p, "\n  "))
				}
				b.shot(fmt.Sprintf("code-commit-%s-%d", scheme, w))
			}
		}
		b.colorScheme("light")
	})

	t.Run("file page", func(t *testing.T) {
		b.t = t // the browser reports failures to the subtest
		for _, w := range []int{1280, 420} {
			b.open(f.srv.URL+"/#file=lib.go", w, 900)
			b.poll("the file page", `document.querySelectorAll("#codepage .range").length === 2`)
			var ranges []string
			b.eval("the ranges", `[...document.querySelectorAll("#codepage .range")].map((r) => r.querySelector("h3").textContent + " | " +
  [...r.querySelectorAll(".why h4 a")].map((a) => a.textContent + " " + a.getAttribute("href")).join(",") + " | " + ((r.querySelector(".concl") || {}).textContent || ""))`, &ranges)
			want0 := "Lines 1–2 · "
			want1 := fmt.Sprintf("Lines 3–4 · %s Retry with exponential backoff | Why Retry backs off #session=%s | Conclusion (thought 3): Conclusion: exponential backoff", commit[:10], sid)
			if len(ranges) != 2 || !strings.HasPrefix(ranges[0], want0) || !strings.HasPrefix(ranges[1], want1) {
				t.Errorf("%d px: ranges\n  %s\nwant the second to start\n  %s", w, strings.Join(ranges, "\n  "), want1)
			}
			if p := b.axeProblems(); len(p) > 0 {
				t.Errorf("file page, %d px: axe-core finds:\n  %s", w, strings.Join(p, "\n  "))
			}
			b.shot(fmt.Sprintf("code-file-%d", w))
		}
		b.run("Enter on the session", chromedp.Focus(`#codepage .range:nth-child(2) .why h4 a`, chromedp.ByQuery), chromedp.KeyEvent(kb.Enter))
		b.poll("the session view", fmt.Sprintf(`state.current === %q && document.querySelector("#codepage").hidden && state.order.length === 4`, sid))
		b.run("back", chromedp.NavigateBack())
		b.poll("the file page again", `!document.querySelector("#codepage").hidden && document.querySelectorAll("#codepage .range").length === 2`)
		b.open(f.srv.URL+"/#file=lib.go&from=9", 1280, 800)
		b.poll("a line past the end", `document.querySelector("#codepage").textContent.includes("from: ")`)
	})

	t.Run("standalone ledger", func(t *testing.T) {
		b.t = t // the browser reports failures to the subtest
		plain := newFixture(t, observatory.Config{})
		id, _ := writeSmall(plain)
		b.open(plain.srv.URL+"/#session="+id, 1280, 800)
		b.run("select thought 9", chromedp.Click(fmt.Sprintf(`[data-node-id=%q]`, id+":9"), chromedp.ByQuery))
		b.poll("the detail", `document.querySelector("#detail h3") !== null`)
		var extra int
		b.eval("no code section", `document.querySelectorAll("#detail .linked, #detail .coderefs, #codepage a").length + (state.codeRepo ? 100 : 0)`, &extra)
		if extra != 0 {
			t.Errorf("a standalone ledger's page shows code parts (%d)", extra)
		}
	})
}
