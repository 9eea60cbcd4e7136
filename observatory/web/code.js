// Thoughtbox Observatory: the code pages. When the ledger is kept in a
// code repository, a session's detail lists the commits that name it, and
// two pages answer "why is this code like this?": #commit=<sha> (the
// sessions a commit is linked to, their conclusion, what was tried) and
// #file=<path> (each run of lines → the commit that last changed it → its
// sessions). The server answers through package why, as `thoughtbox why`
// and `blame` do. Loaded before app.js, whose helpers (el, $, state, …)
// these functions call once the page runs.
"use strict";

async function codeFetch(path) {
  const r = await fetch(path, { credentials: "same-origin" });
  let body = null;
  try { body = await r.json(); } catch (e) { /* not JSON */ }
  if (!r.ok) throw new Error((body && body.message) || r.status + " " + r.statusText);
  return body;
}

// loadCodeInfo asks whether the ledger is kept in a code repository;
// without one the page shows nothing of this file.
async function loadCodeInfo() {
  try {
    state.codeRepo = !!(await codeFetch("/ui/code")).repository;
  } catch (e) {
    state.codeRepo = false;
  }
  if (state.codeRepo && state.current) loadLinked(state.current);
}

// loadLinked fetches the commits linked to session id for the detail
// panel; the list shown stays until the new one arrives.
async function loadLinked(id) {
  if (!state.codeRepo) return;
  if (!state.linked || state.linked.sessionId !== id) {
    state.linked = null;
    renderDetail();
  }
  state.linkedAt = Date.now();
  let linked;
  try {
    linked = await codeFetch("/ui/code/session/" + encodeURIComponent(id));
  } catch (e) {
    linked = { error: e.message };
  }
  if (state.current !== id) return;
  state.linked = linked;
  renderDetail();
}

// refreshLinked reads the open session's commits again, at most every
// ten seconds: a person may commit while the agent writes, and each read
// walks the code's history once.
function refreshLinked() {
  if (state.codeRepo && state.current && Date.now() - (state.linkedAt || 0) > 10000) loadLinked(state.current);
}

function shortSha(sha) { return (sha || "").slice(0, 10); }
function commitHref(sha) { return "#commit=" + encodeURIComponent(sha); }
function sessionHref(id) { return "#session=" + encodeURIComponent(id); }
function fileHref(path, from, to) {
  let h = "#file=" + encodeURIComponent(path);
  if (from) h += "&from=" + from + (to && to !== from ? "&to=" + to : "");
  return h;
}

function link(href, text, cls) {
  const a = el("a", cls || "", text);
  a.href = href;
  return a;
}

// lines spells a line range: "12", "12-20", or "" for the whole file.
function lines(from, to) {
  if (!from) return "";
  return to && to !== from ? from + "-" + to : "" + from;
}

// codeRefList is a thought's code references: into the file and commit
// pages when the ledger is kept in the code's repository, plain text
// otherwise.
function codeRefList(refs) {
  const ul = el("ul", "coderefs");
  for (const r of refs) {
    const li = el("li");
    if (r.path) {
      const text = r.path + (r.from ? ":" + lines(r.from, r.to) : "");
      li.appendChild(state.codeRepo ? link(fileHref(r.path, r.from, r.to), text) : el("code", "", text));
    }
    if (r.commit) {
      if (r.path) li.appendChild(document.createTextNode(" at "));
      li.appendChild(state.codeRepo ? link(commitHref(r.commit), shortSha(r.commit)) : el("code", "", shortSha(r.commit)));
    }
    ul.appendChild(li);
  }
  return ul;
}

// linkedSection is the detail panel's list of the commits that name the
// open session (null when there is no code repository).
function linkedSection() {
  if (!state.codeRepo || !state.current) return null;
  const sec = el("section", "linked");
  sec.appendChild(el("h3", "", "Commits linked to this session"));
  const l = state.linked;
  if (!l) {
    sec.appendChild(el("p", "hint", "Reading the code's history…"));
  } else if (l.error) {
    sec.appendChild(el("p", "hint", "Could not read them: " + l.error));
  } else if (!l.commits.length) {
    sec.appendChild(el("p", "hint", "No commit names this session yet: with `thoughtbox hooks install`, each commit made while it is the worktree's active session does."));
  } else {
    const ul = el("ul", "commits");
    for (const c of l.commits) {
      const li = el("li");
      li.appendChild(link(commitHref(c.commit), shortSha(c.commit), "sha"));
      li.appendChild(document.createTextNode(" " + c.subject));
      ul.appendChild(li);
    }
    sec.appendChild(ul);
    if (l.more) sec.appendChild(el("p", "hint", "More commits name it; these are the newest."));
  }
  return sec;
}

// ---- the pages ----

// parseHash reads the page the address names: a session, a commit, a file
// (with an optional line range), or none (the landing view).
function parseHash() {
  const q = new URLSearchParams(location.hash.replace(/^#/, ""));
  const n = (k) => { const v = parseInt(q.get(k), 10); return v > 0 ? v : 0; };
  if (q.get("session")) return { session: q.get("session") };
  if (q.get("commit")) return { page: { kind: "commit", rev: q.get("commit") } };
  if (q.get("file")) return { page: { kind: "file", path: q.get("file"), from: n("from"), to: n("to") } };
  return {};
}

function pageKey(p) { return p ? [p.kind, p.rev || p.path, p.from || "", p.to || ""].join("|") : ""; }

// route shows what the address names; the back button and links into the
// pages (plain anchors, so Tab and Enter reach them) both come here.
function route() {
  const h = parseHash();
  if (h.session) {
    if (h.session !== state.current || state.codePage) openSession(h.session);
  } else if (h.page) {
    if (pageKey(h.page) !== pageKey(state.codePage)) openCodePage(h.page);
  } else if (state.current || state.codePage) {
    goHome();
  }
}

// openCodePage leaves any open session and shows a commit or file page.
async function openCodePage(page) {
  if (state.current) send("reasoning:" + state.current, "unsubscribe");
  state.current = null;
  resetSession();
  state.selected = null;
  state.codePage = page;
  const host = $("codepage");
  host.replaceChildren(el("p", "hint", "Reading the reasoning behind the code…"));
  showStage();
  renderDetail();
  renderSessions();
  let ans;
  try {
    ans = page.kind === "commit"
      ? await codeFetch("/ui/code/commit/" + encodeURIComponent(page.rev))
      : await codeFetch("/ui/code/file?" + new URLSearchParams(Object.entries({ path: page.path, from: page.from || "", to: page.to || "" }).filter(([, v]) => v !== "")));
  } catch (e) {
    if (state.codePage !== page) return;
    host.replaceChildren(el("h2", "", page.kind === "commit" ? "Commit " + page.rev : page.path), el("p", "hint", e.message));
    return;
  }
  if (state.codePage !== page) return;
  host.replaceChildren(...(page.kind === "commit" ? commitPage(ans) : filePage(ans, page)));
  host.scrollTop = 0;
  host.focus({ preventScroll: true });
}

function commitPage(ans) {
  const c = ans.commits[0];
  const parts = [el("h2", "", "Commit " + shortSha(c.commit))];
  const head = el("p", "subject", c.subject);
  parts.push(head);
  if (c.files.length) {
    const files = el("p", "m");
    files.appendChild(document.createTextNode("Changed: "));
    c.files.forEach((f, i) => {
      if (i) files.appendChild(document.createTextNode(", "));
      files.appendChild(link(fileHref(f), f));
    });
    parts.push(files);
  }
  if (!c.sessions.length) parts.push(el("p", "hint", "No session of this ledger is linked to this commit."));
  for (const s of c.sessions) parts.push(whySession(s, "Thoughts about the files it changed"));
  parts.push(...warnings(ans.warnings));
  return parts;
}

function filePage(ans, page) {
  const parts = [el("h2", "", ans.path + (page.from ? ":" + lines(page.from, page.to) : ""))];
  parts.push(el("p", "m", "Each run of lines, the commit that last changed it, and the reasoning linked to that commit."));
  const ol = el("ol", "ranges");
  for (const r of ans.lines) {
    const li = el("li", "range");
    const h = el("h3");
    h.appendChild(document.createTextNode((r.from === r.to ? "Line " + r.from : "Lines " + r.from + "–" + r.to) + " · "));
    if (/^0+$/.test(r.commit)) h.appendChild(el("span", "hint", "not committed yet"));
    else {
      h.appendChild(link(commitHref(r.commit), shortSha(r.commit), "sha"));
      h.appendChild(document.createTextNode(" " + r.subject));
    }
    li.appendChild(h);
    if (!r.sessions.length && !/^0+$/.test(r.commit)) li.appendChild(el("p", "hint", "No session is linked to this commit."));
    for (const s of r.sessions) li.appendChild(whySession(s, "Thoughts about these lines", true));
    ol.appendChild(li);
  }
  parts.push(ol, ...warnings(ans.warnings));
  return parts;
}

// whySession is what one linked session says about the code: its title
// (into the session view), its conclusion, the thoughts that name the
// code, its revisions and, unless brief, its branches (what was tried).
function whySession(s, touchingTitle, brief) {
  const sec = el("section", "why");
  const h = el(brief ? "h4" : "h3");
  h.appendChild(link(sessionHref(s.sessionId), s.title || s.sessionId));
  sec.appendChild(h);
  if (s.conclusion) {
    const p = el("p", "concl");
    p.appendChild(el("strong", "", "Conclusion (thought " + s.conclusion.thoughtNumber + "): "));
    p.appendChild(document.createTextNode(s.conclusion.thought));
    sec.appendChild(p);
  }
  const list = (title, thoughts, label) => {
    if (!thoughts.length) return;
    sec.appendChild(el(brief ? "h5" : "h4", "", title));
    const ul = el("ul", "thoughts");
    for (const t of thoughts) ul.appendChild(el("li", "", label(t) + t.thought));
    sec.appendChild(ul);
  };
  const num = (t) => "Thought " + t.thoughtNumber + (t.branchId ? " (branch " + t.branchId + ")" : "") + ": ";
  list(touchingTitle, s.touching, num);
  if (!brief) {
    list("Revisions", s.revisions, (t) => "Thought " + t.thoughtNumber + " revises thought " + t.revisesThought + ": ");
    for (const b of s.branches) {
      const d = el("details", "tried");
      d.appendChild(el("summary", "", "Tried on branch " + b.branchId + " · from thought " + b.fromThought + " · " + plural(b.thoughts.length, "thought", "thoughts")));
      const ol = el("ol", "thoughts");
      for (const t of b.thoughts) ol.appendChild(el("li", "", t.thought));
      d.appendChild(ol);
      sec.appendChild(d);
    }
  }
  return sec;
}

function warnings(ws) {
  if (!ws || !ws.length) return [];
  const ul = el("ul", "warnings");
  for (const w of ws) ul.appendChild(el("li", "", w));
  return [el("p", "hint", "Ignored:"), ul];
}
