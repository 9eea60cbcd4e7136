// Thoughtbox Observatory web UI. No build step and no dependencies: the
// graph is SVG laid out here (see doc/architecture.md for why).
// Every server message is [topic, event, payload].
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

const prefs = {
  get(k, d) { try { const v = localStorage.getItem("thoughtbox." + k); return v === null ? d : v; } catch (e) { return d; } },
  set(k, v) { try { localStorage.setItem("thoughtbox." + k, v); } catch (e) { /* private mode */ } },
};

const state = {
  ws: null,
  retry: 500,
  live: new Map(),     // id -> session written to within the live window
  liveWindowMs: 5 * 60 * 1000,
  history: [],         // the recent sessions, as paged from the server
  historyNext: 0,      // the offset of the next page
  historyMore: false,
  search: "",
  tag: "",
  status: "",
  author: "",
  current: null,       // session id shown
  session: null,       // its ObservatorySession
  main: [],            // main-chain thoughts in order
  branches: new Map(), // id -> {id, fromThoughtNumber, thoughts: []}
  nodes: new Map(),    // node id -> thought
  order: [],           // node ids in the order they arrived
  selected: null,
  fresh: new Set(),
  details: new Map(),  // node id -> thought:detail payload
  view: prefs.get("view", "graph"),
  allArcs: prefs.get("allArcs", "0") === "1",
  zoom: 1,
  follow: true,        // keep the newest thought in sight
  layout: null,
  g: null,             // the graph's drawn elements, kept between renders
  readingDirty: true,
  openedAt: 0,
  drawnOnce: false,
  codeRepo: false,     // the ledger is kept in a code repository (code.js)
  codePage: null,      // the commit or file page shown, if any
  linked: null,        // the commits linked to the open session
  linkedAt: 0,         // when they were last asked for
};

// The token, if the page was opened with ?token=, now lives in a cookie the
// server set; take it out of the address bar. ?code=<repository URL> makes
// file and commit references in thoughts links into that repository.
{
  const q = new URLSearchParams(location.search);
  if (q.has("code")) prefs.set("codeBase", q.get("code").replace(/\/+$/, ""));
  if (q.has("token") || q.has("code")) history.replaceState(null, "", location.pathname + location.hash);
}

function send(topic, event, payload) {
  if (state.ws && state.ws.readyState === WebSocket.OPEN) {
    state.ws.send(JSON.stringify(payload === undefined ? [topic, event] : [topic, event, payload]));
  }
}

function setConn(text, cls) {
  const c = $("conn");
  c.textContent = text;
  c.className = "conn " + (cls || "");
}

function connect() {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(proto + "//" + location.host + "/ws");
  state.ws = ws;
  ws.onopen = () => {
    state.retry = 500;
    setConn("live", "open");
    send("observatory", "subscribe");
    requestHistory(0);
    if (state.current) send("reasoning:" + state.current, "subscribe");
    loadLanding();
  };
  ws.onmessage = (m) => {
    let msg;
    try { msg = JSON.parse(m.data); } catch (e) { return; }
    if (Array.isArray(msg) && msg.length === 3) handle(msg[0], msg[1], msg[2]);
  };
  ws.onclose = (e) => {
    state.ws = null;
    const why = e.reason ? " (" + e.reason + ")" : "";
    setConn("disconnected" + why + ", reconnecting…", "lost");
    setTimeout(connect, state.retry);
    state.retry = Math.min(state.retry * 2, 5000);
  };
}

// requestHistory asks for a page of recent sessions; offset 0 starts the
// list again. The server pages through its session index, so the list
// costs what a page costs however many sessions the ledger holds.
let historySeq = 0;
async function requestHistory(offset) {
  const q = new URLSearchParams({ limit: "50", offset: String(offset) });
  if (state.search) q.set("search", state.search);
  if (state.tag) q.set("tag", state.tag);
  if (state.status) q.set("status", state.status);
  if (state.author) q.set("author", state.author);
  const seq = ++historySeq;
  let p;
  try {
    const r = await fetch("/ui/sessions?" + q, { credentials: "same-origin" });
    p = await r.json();
    if (!r.ok) throw new Error(p.message || r.statusText);
  } catch (e) {
    if (seq === historySeq) $("history").replaceChildren(el("li", "hint", "Cannot list the sessions: " + e.message));
    return;
  }
  if (seq !== historySeq) return; // a newer request is on its way
  state.history = offset > 0 ? state.history.concat(p.sessions) : p.sessions;
  state.historyNext = p.next;
  state.historyMore = p.hasMore;
  renderSessions();
}

function handle(topic, event, p) {
  if (topic === "observatory") return handleObservatory(event, p);
  if (topic !== "reasoning:" + state.current) return;
  switch (event) {
    case "session:snapshot":
      loadSnapshot(p);
      return;
    case "thought:added":
    case "thought:revised":
    case "thought:branched":
      addThought(p.thought, p.branchId ? p : null);
      refreshLinked();
      return;
    case "thought:critiqued": {
      const t = state.nodes.get(p.thoughtId);
      if (!t) return;
      t.critique = p.critique;
      const d = state.details.get(p.thoughtId);
      if (d) d.critique = p.critique;
      state.readingDirty = true;
      scheduleRender();
      if (state.selected === p.thoughtId) renderDetail();
      return;
    }
    case "session:ended":
      if (state.session) {
        state.session.status = "completed";
        state.session.completedAt = p.completedAt;
        renderHead();
        updateNewest();
      }
      return;
    case "thought:detail":
      state.details.set(p.id, p);
      if (state.selected === p.id) renderDetail();
      return;
    case "error":
      if (!state.session) {
        $("session-head").replaceChildren(el("p", "hint", "Cannot open this session: " + p.message));
      } else if (state.selected) {
        // A failed detail request: say so instead of "loading…".
        state.details.set(state.selected, { id: state.selected, author: "(unavailable: " + p.message + ")" });
        renderDetail();
      }
      return;
  }
}

function handleObservatory(event, p) {
  switch (event) {
    case "sessions:active":
      state.live = new Map(p.sessions.map((s) => [s.id, s]));
      scheduleSessions();
      return;
    case "session:started":
      state.live.set(p.session.id, p.session);
      scheduleSessions();
      return;
    case "session:updated": {
      let s = state.live.get(p.sessionId) || state.history.find((h) => h.id === p.sessionId);
      if (s) {
        s = Object.assign({}, s, { thoughtCount: p.thoughtCount, updatedAt: p.updatedAt, status: "active", completedAt: null });
        state.live.set(s.id, s);
      } else {
        send("observatory", "list:active");
      }
      scheduleSessions();
      return;
    }
    case "session:ended": {
      const s = state.live.get(p.sessionId);
      if (s) state.live.set(s.id, Object.assign({}, s, { status: "completed", completedAt: p.completedAt, thoughtCount: p.finalThoughtCount }));
      scheduleSessions();
      return;
    }
    case "error":
      setConn("error: " + p.message, "lost");
      return;
  }
}

function resetSession() {
  state.session = null;
  state.main = [];
  state.branches = new Map();
  state.nodes = new Map();
  state.order = [];
  state.details = new Map();
  state.g = null;
  state.layout = null;
  state.layoutKey = "";
  state.readingDirty = true;
}

function loadSnapshot(p) {
  resetSession();
  state.session = p.session;
  state.main = p.thoughts.slice();
  for (const t of state.main) remember(t);
  for (const id of Object.keys(p.branches)) {
    const b = p.branches[id];
    state.branches.set(id, { id: id, fromThoughtNumber: b.fromThoughtNumber, origin: b.origin, thoughts: b.thoughts.slice() });
    for (const t of b.thoughts) remember(t);
  }
  state.order.sort((a, b) => state.nodes.get(a).timestamp.localeCompare(state.nodes.get(b).timestamp));
  if (state.selected && !state.nodes.has(state.selected)) state.selected = null;
  state.follow = isLive();
  renderHead();
  render();
  renderDetail();
  if (!state.drawnOnce) {
    state.drawnOnce = true;
    performance.mark("thoughtbox:graph-drawn");
    performance.measure("thoughtbox:open-to-graph", "thoughtbox:session-open", "thoughtbox:graph-drawn");
  }
  if (state.follow) scrollToNewest(); else $(state.view === "read" ? "reading" : "graph").scrollTop = 0;
  updateNewest();
}

function remember(t) {
  if (!state.nodes.has(t.id)) state.order.push(t.id);
  state.nodes.set(t.id, t);
}

function addThought(t, branched) {
  if (state.nodes.has(t.id)) return;
  if (t.branchId) {
    let b = state.branches.get(t.branchId);
    if (!b) {
      b = { id: t.branchId, fromThoughtNumber: branched ? branched.fromThoughtNumber : t.branchFromThought, origin: t.branchOrigin, thoughts: [] };
      state.branches.set(t.branchId, b);
    }
    b.thoughts.push(t);
  } else {
    state.main.push(t);
  }
  remember(t);
  state.fresh.add(t.id);
  if (state.session) {
    state.session.thoughtCount = state.nodes.size;
    state.session.branchCount = state.branches.size;
    if (t.nextThoughtNeeded) state.session.status = "active";
  }
  if (!state.readingDirty && state.view === "read") appendReading(t); else state.readingDirty = true;
  state.headDirty = true;
  scheduleRender();
}

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    if (state.headDirty) { state.headDirty = false; renderHead(); }
    render();
    if (state.follow && isLive()) scrollToNewest();
    updateNewest();
  });
}

function render() {
  performance.mark("thoughtbox:render-start");
  if (state.view === "read") renderReading(); else renderGraph();
  performance.measure("thoughtbox:render", "thoughtbox:render-start");
}

// ---- small helpers ----

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function svg(tag, attrs, parent) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}

function when(ts) {
  return ts ? new Date(ts).toLocaleString() : "";
}

function clock(ts) {
  return ts ? new Date(ts).toLocaleTimeString() : "";
}

function ago(ts) {
  const s = Math.max(0, (Date.now() - new Date(ts).getTime()) / 1000);
  if (s < 60) return "just now";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return new Date(ts).toLocaleDateString();
}

function plural(n, one, many) {
  return n + " " + (n === 1 ? one : many);
}

function short(s, n) {
  s = (s || "").replace(/\s+/g, " ").trim();
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

function isLive() {
  return !!state.session && state.session.status === "active";
}

const cipherNames = { H: "hypothesis", E: "evidence", C: "conclusion", Q: "question", R: "revision", P: "plan",
  O: "observation", A: "assumption", X: "rejected" };

// textOf is what a thought says: a cipher line's content without its header.
function textOf(t) {
  return t.cipher ? t.cipher.content : t.thought;
}

function typeOf(t) {
  if (t.cipher && cipherNames[t.cipher.type]) return cipherNames[t.cipher.type];
  if (t.isRevision) return "revision";
  if (!t.nextThoughtNeeded) return "conclusion";
  return "thought";
}

function kindOf(t) {
  if (t.isRevision) return "revision of thought " + t.revisesThought;
  if (t.branchId) return "branch " + t.branchId;
  return "main chain";
}

// ---- session list ----

function sessionItem(s) {
  const li = el("li", "row" + (s.id === state.current ? " current" : ""));
  const b = el("button", "session");
  b.type = "button";
  b.dataset.sessionId = s.id;
  if (s.id === state.current) b.setAttribute("aria-current", "true");
  b.appendChild(el("span", "t", s.title || s.id));
  const m = el("span", "m");
  m.appendChild(el("span", "status " + s.status, s.status));
  m.appendChild(document.createTextNode(plural(s.thoughtCount, "thought", "thoughts") + " · " + ago(s.updatedAt) + (s.author ? " · " + s.author : "")));
  b.appendChild(m);
  b.addEventListener("click", () => openSession(s.id));
  li.appendChild(b);
  if (s.tags && s.tags.length) {
    const tags = el("div", "tags");
    for (const t of s.tags) {
      const tb = el("button", "tag", t);
      tb.type = "button";
      tb.title = "Show sessions tagged " + t;
      tb.addEventListener("click", () => setTag(t));
      tags.appendChild(tb);
    }
    li.appendChild(tags);
  }
  return li;
}

function matches(s) {
  if (state.author && s.author !== undefined && !s.author.toLowerCase().includes(state.author.toLowerCase())) return false;
  if (state.status && s.status !== state.status) return false;
  if (state.tag && !(s.tags || []).some((t) => t.toLowerCase() === state.tag.toLowerCase())) return false;
  if (!state.search) return true;
  const hay = ((s.title || "") + " " + (s.description || "")).toLowerCase();
  return state.search.toLowerCase().split(/\s+/).every((w) => hay.includes(w));
}

// liveNow: sessions written to within the live window. The rest is history.
function liveNow() {
  const since = Date.now() - state.liveWindowMs;
  const out = new Map();
  for (const s of state.live.values()) if (new Date(s.updatedAt).getTime() >= since) out.set(s.id, s);
  for (const s of state.history) if (!out.has(s.id) && new Date(s.updatedAt).getTime() >= since) out.set(s.id, s);
  return out;
}

// scheduleSessions redraws the session list once a frame at most: each
// thought an agent writes sends a session:updated.
let sessionsQueued = false;
function scheduleSessions() {
  if (sessionsQueued) return;
  sessionsQueued = true;
  requestAnimationFrame(() => { sessionsQueued = false; renderSessions(); });
}

function renderSessions() {
  const now = liveNow();
  const live = [...now.values()].filter(matches).sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
  $("live").replaceChildren(...(live.length ? live.map(sessionItem) : [el("li", "hint", "Nothing written in the last " + minutes(state.liveWindowMs) + ".")]));
  $("live-window").textContent = "· last " + minutes(state.liveWindowMs);
  const hist = state.history.filter((s) => !now.has(s.id));
  $("history").replaceChildren(...(hist.length ? hist.map(sessionItem) : [el("li", "hint", "Nothing here.")]));
  $("more").hidden = !state.historyMore;
  const tf = $("tagfilter");
  tf.hidden = !state.tag;
  if (state.tag) {
    const b = el("button", "tag", state.tag + " ✕");
    b.type = "button";
    b.title = "Clear the tag filter";
    b.addEventListener("click", () => setTag(""));
    tf.replaceChildren(document.createTextNode("Tag: "), b);
  }
}

function minutes(ms) {
  const m = Math.round(ms / 60000);
  return m >= 120 ? Math.round(m / 60) + " h" : m + " min";
}

function setTag(t) {
  state.tag = t;
  requestHistory(0);
  renderSessions();
}

function openSession(id) {
  if (state.current && state.current !== id) send("reasoning:" + state.current, "unsubscribe");
  state.current = id;
  state.codePage = null;
  resetSession();
  state.selected = null;
  state.drawnOnce = false;
  performance.clearMarks("thoughtbox:session-open");
  performance.mark("thoughtbox:session-open");
  if (location.hash !== "#session=" + encodeURIComponent(id)) history.pushState(null, "", "#session=" + encodeURIComponent(id));
  $("session-head").replaceChildren(el("p", "hint", "Loading the session from the ledger…"));
  $("graph").replaceChildren();
  $("reading").replaceChildren();
  $("landing").replaceChildren();
  showStage();
  renderDetail();
  renderSessions();
  send("reasoning:" + id, "subscribe");
  loadLinked(id);
}

function renderHead() {
  const s = state.session;
  if (!s) return;
  const title = el("h2", "", s.title || s.id);
  const m = el("p", "m");
  m.appendChild(el("span", "status " + s.status, s.status));
  let text = plural(state.nodes.size, "thought", "thoughts") + " · " + plural(state.branches.size, "branch", "branches") +
    " · started " + when(s.createdAt);
  if (s.completedAt) text += " · completed " + when(s.completedAt);
  m.appendChild(document.createTextNode(text));
  $("session-head").replaceChildren(title, m);
}

// showStage shows the chosen view of a session, or the landing view.
function showStage() {
  const open = !!state.current;
  $("landing").hidden = open || !!state.codePage;
  $("codepage").hidden = open || !state.codePage;
  $("toolbar").hidden = !open;
  $("legend").hidden = !open || state.view !== "graph";
  $("graph").hidden = !open || state.view !== "graph";
  $("reading").hidden = !open || state.view !== "read";
  $("graph-tools").hidden = state.view !== "graph";
  $("view-graph").setAttribute("aria-pressed", String(state.view === "graph"));
  $("view-read").setAttribute("aria-pressed", String(state.view === "read"));
  if (!open || state.view !== "graph") {
    $("minimap").toggleAttribute("hidden", true);
    $("stage").classList.remove("with-map");
  }
  if (!open) {
    $("session-head").replaceChildren();
    $("newest").hidden = true;
  }
}

function setView(v) {
  if (state.view === v) return;
  state.view = v;
  prefs.set("view", v);
  showStage();
  render();
  if (state.selected) revealSelected(); else if (state.follow && isLive()) scrollToNewest();
  updateNewest();
}

// ---- the graph's layout ----

// Sizes, in SVG units at zoom 1. In the snake a cell holds a node and its
// two-line label under it; LW is the widest a label line may be, so the
// labels of neighbouring cells keep a gap of CW - LW between them. When
// one cell is all that fits (a phone), the chain runs down the left edge
// with each label beside its node instead (the list mode).
const CW = 190, LW = 172, R = 15, ROW = 86, HEAD = 22, M = 36, TOP = 6, MAXCHARS = 62;
const NX = 22, NROW = 50, NHEAD = 20, INDENT = 36;

let measureCtx = null;
function textWidth(s) {
  if (!measureCtx) {
    measureCtx = document.createElement("canvas").getContext("2d");
    measureCtx.font = "12px system-ui, -apple-system, \"Segoe UI\", Roboto, sans-serif";
  }
  return measureCtx.measureText(s).width;
}

// fitLine returns the longest prefix of words that fits max (breaking a
// word too long for a line of its own), and the rest.
function fitLine(words, max) {
  let line = "";
  let i = 0;
  for (; i < words.length; i++) {
    const next = line ? line + " " + words[i] : words[i];
    if (textWidth(next) <= max) { line = next; continue; }
    if (!line) {
      let k = words[i].length;
      while (k > 1 && textWidth(words[i].slice(0, k)) > max) k--;
      return { line: words[i].slice(0, k), rest: [words[i].slice(k)].concat(words.slice(i + 1)) };
    }
    break;
  }
  return { line: line, rest: words.slice(i) };
}

const wrapCache = new Map();
// wrap cuts a thought to two lines of at most width each, and to about
// sixty characters.
function wrap(text, width) {
  const key = width + "|" + text;
  if (wrapCache.has(key)) return wrapCache.get(key);
  let s = (text || "").replace(/\s+/g, " ").trim();
  const cut = s.length > MAXCHARS;
  if (cut) {
    // Cut between words, so that the label shows whole words only.
    s = s.slice(0, MAXCHARS);
    const sp = s.lastIndexOf(" ");
    s = sp > MAXCHARS / 2 ? s.slice(0, sp) : s.slice(0, MAXCHARS - 1);
  }
  const a = fitLine(s.split(" "), width);
  const lines = [a.line];
  if (a.rest.length) {
    const b = fitLine(a.rest, width - textWidth("…"));
    lines.push(b.line + (b.rest.length || cut ? "…" : ""));
  } else if (cut) {
    lines[0] = fitLine(s.split(" "), width - textWidth("…")).line + "…";
    if (a.line !== lines[0].slice(0, -1)) lines.push("");
  }
  if (wrapCache.size > 5000) wrapCache.clear();
  wrapCache.set(key, lines.filter((l) => l !== ""));
  return wrapCache.get(key);
}

// fitOne cuts s to one line of at most width, with an ellipsis.
function fitOne(s, width) {
  if (textWidth(s) <= width) return s;
  let k = s.length;
  while (k > 1 && textWidth(s.slice(0, k) + "…") > width) k--;
  return s.slice(0, k) + "…";
}

function mainIndex() {
  const idx = new Map();
  state.main.forEach((t, i) => { if (!t.isRevision || !idx.has(t.thoughtNumber)) idx.set(t.thoughtNumber, i); });
  return idx;
}

// forksByRow gives, per row of the main chain, the branches forking from
// it with their fork thought.
function forksByRow(cols, rows) {
  const idx = mainIndex();
  const byRow = Array.from({ length: rows }, () => []);
  for (const b of state.branches.values()) {
    const i = idx.has(b.fromThoughtNumber) ? idx.get(b.fromThoughtNumber) : Math.max(0, state.main.length - 1);
    byRow[Math.floor(i / cols)].push({ b: b, fork: state.main[i] });
  }
  return byRow;
}

// layout places the main chain as the seeds' snake: rows that run left to
// right, then right to left, turning outside the last column. Each branch
// gets a block of its own rows under the row of its fork thought, so no
// branch node sits on a row of the main chain and no branch line crosses
// it; a branch is a snake too, starting under its fork.
function layout(avail) {
  const cols = Math.max(1, Math.floor((avail - 2 * M) / CW));
  if (cols === 1) return listLayout(avail);
  const colX = (c) => M + CW / 2 + c * CW;
  const pos = new Map();
  const rows = Math.max(1, Math.ceil(state.main.length / cols));
  const byRow = forksByRow(cols, rows);
  const blocks = [];
  let top = TOP;
  for (let r = 0; r < rows; r++) {
    const ltr = r % 2 === 0;
    const y = top + R + 6;
    for (let c = 0; c < cols; c++) {
      const i = r * cols + c;
      if (i >= state.main.length) break;
      const vc = ltr ? c : cols - 1 - c;
      pos.set(state.main[i].id, { x: colX(vc), y: y, vc: vc, lw: LW });
    }
    top += ROW;
    for (const f of byRow[r]) top = placeBranch(f, pos, ltr ? -1 : 1, cols, colX, top, blocks);
  }
  return { mode: "snake", pos: pos, cols: cols, width: 2 * M + cols * CW, height: top + 8, blocks: blocks, left: M, right: M + cols * CW };
}

function placeBranch(f, pos, dir, cols, colX, top, blocks) {
  const fp = f.fork ? pos.get(f.fork.id) : null;
  let vc = fp ? fp.vc : 0;
  // The header starts right of the line that comes down from the fork.
  const block = { b: f.b, fork: fp, headY: top + 15, x: colX(vc) - CW / 2 + 10, anchor: "start", lw: CW - 20 };
  top += HEAD;
  let y = top + R + 6;
  f.b.thoughts.forEach((t, j) => {
    if (j > 0) {
      let nv = vc + dir;
      if (nv < 0 || nv >= cols) {
        dir = -dir;
        nv = vc;
        top += ROW;
        y = top + R + 6;
      }
      vc = nv;
    }
    pos.set(t.id, { x: colX(vc), y: y, vc: vc, lw: LW });
  });
  blocks.push(block);
  return top + ROW;
}

// listLayout is the narrow layout: one thought a row down the left edge,
// labels beside the nodes, each branch indented under its fork.
function listLayout(avail) {
  const width = Math.max(avail, 240);
  const lw = width - NX - R - 10 - 6;
  const pos = new Map();
  const byRow = forksByRow(1, Math.max(1, state.main.length));
  const blocks = [];
  let top = TOP;
  state.main.forEach((t, i) => {
    pos.set(t.id, { x: NX, y: top + R + 4, vc: 0, lw: lw });
    top += NROW;
    for (const f of byRow[i]) {
      const fp = pos.get(f.fork.id);
      blocks.push({ b: f.b, fork: fp, headY: top + 14, x: NX + INDENT + R + 10, anchor: "start", lw: lw - INDENT });
      top += NHEAD;
      for (const bt of f.b.thoughts) {
        pos.set(bt.id, { x: NX + INDENT, y: top + R + 4, vc: 0, lw: lw - INDENT });
        top += NROW;
      }
    }
  });
  return { mode: "list", pos: pos, cols: 1, width: width, height: top + 8, blocks: blocks, left: NX, right: width };
}

// ---- drawing the graph ----

function pathTurn(a, b, gx) {
  return "M" + a.x + "," + a.y + " H" + gx + " V" + b.y + " H" + b.x;
}

// sideOf is the gutter (left or right of every column) by which a row
// that ends at p turns: outer for the main chain, inner for branches.
function sideOf(L, p, outer) {
  return p.x > L.left + CW / 2 ? L.right + (outer ? 22 : 10) : L.left - (outer ? 22 : 10);
}

// inBand says whether a line from y1 to y2 crosses the drawn band.
function inBand(win, y1, y2) {
  return Math.max(y1, y2) >= win.top && Math.min(y1, y2) <= win.bottom;
}

function mainPath(L, win) {
  let d = "";
  for (let i = 1; i < state.main.length; i++) {
    const a = L.pos.get(state.main[i - 1].id), b = L.pos.get(state.main[i].id);
    if (!inBand(win, a.y, b.y)) continue;
    if (a.y === b.y || L.mode === "list") d += "M" + a.x + "," + a.y + " L" + b.x + "," + b.y;
    else d += pathTurn(a, b, sideOf(L, a, true));
  }
  return d;
}

function forkPath(L, fork, first) {
  if (L.mode === "list") {
    // Down and out from under the fork's node, below its label.
    return "M" + fork.x + "," + (fork.y + R) + " L" + first.x + "," + (fork.y + R + 20) + " L" + first.x + "," + first.y;
  }
  // Leave the fork by the gap beside its label, so that the line crosses
  // no label, and come into the first branch thought from above.
  const gx = fork.x + (first.x === fork.x ? -CW / 2 : (first.x - fork.x) / 2);
  return "M" + fork.x + "," + fork.y + " L" + gx + "," + (fork.y + R + 2) + " V" + (first.y - R - 4) + " L" + first.x + "," + first.y;
}

function branchPath(L, win) {
  let d = "";
  for (const bl of L.blocks) {
    const ts = bl.b.thoughts;
    if (!ts.length) continue;
    const first = L.pos.get(ts[0].id);
    if (bl.fork && inBand(win, bl.fork.y, first.y)) d += forkPath(L, bl.fork, first);
    for (let j = 1; j < ts.length; j++) {
      const a = L.pos.get(ts[j - 1].id), b = L.pos.get(ts[j].id);
      if (!inBand(win, a.y, b.y)) continue;
      if (a.y === b.y || L.mode === "list") d += "M" + a.x + "," + a.y + " L" + b.x + "," + b.y;
      else d += pathTurn(a, b, sideOf(L, a, false));
    }
  }
  return d;
}

function arcPath(a, b) {
  // An arc bows to the side, away from the straight line of a row.
  const mx = (a.x + b.x) / 2, my = (a.y + b.y) / 2;
  const dx = b.x - a.x, dy = b.y - a.y;
  const len = Math.max(1, Math.hypot(dx, dy));
  const bow = Math.min(60, 18 + len / 6);
  return "M" + a.x + "," + a.y + " Q" + (mx - dy / len * bow) + "," + (my + dx / len * bow) + " " + b.x + "," + b.y;
}

// arcs are the revision and reference links: of the selected thought (to
// it and from it), or all of them on the "all links" toggle.
function arcs(L) {
  let rev = "", ref = "";
  const sel = state.selected;
  for (const t of state.nodes.values()) {
    const p = L.pos.get(t.id);
    if (!p) continue;
    if (t.revisesNode && L.pos.get(t.revisesNode) && (state.allArcs || sel === t.id || sel === t.revisesNode)) {
      rev += arcPath(p, L.pos.get(t.revisesNode));
    }
    for (const r of (t.cipher && t.cipher.refs) || []) {
      if (r.revision || !r.node || !L.pos.get(r.node) || r.node === t.parentId) continue;
      if (state.allArcs || sel === t.id || sel === r.node) ref += arcPath(p, L.pos.get(r.node));
    }
  }
  return { rev: rev, ref: ref };
}

function newGraph(mode) {
  const s = svg("svg", { class: "g", role: "group", "aria-label": "Reasoning graph" });
  const g = { svg: s, nodes: new Map(), mode: mode };
  const edges = svg("g", {}, s);
  g.main = svg("path", {}, edges);
  g.branch = svg("path", {}, edges);
  g.rev = svg("path", {}, edges);
  g.ref = svg("path", {}, edges);
  g.heads = svg("g", {}, s);
  g.layer = svg("g", {}, s);
  return g;
}

function nodeElement(t) {
  const g = svg("g", { tabindex: "0", role: "button", "data-node-id": t.id });
  svg("circle", { class: "dot", r: R }, g);
  // Each text ends with a space that SVG does not draw, so that the text
  // of the node read as a whole keeps its words apart.
  svg("text", { class: "num" }, g).textContent = t.thoughtNumber + " ";
  g.addEventListener("click", () => select(t.id));
  g.addEventListener("keydown", (e) => onNodeKey(e, t.id));
  return { g: g, tr: "", cls: "", crit: false, shape: "", labels: [] };
}

// setLabel (re)writes a node's label lines for the layout's mode and width.
function setLabel(n, t, mode, lw) {
  const shape = mode + lw;
  if (n.shape === shape) return;
  n.shape = shape;
  for (const l of n.labels) l.remove();
  // A transparent box over the node and its label takes the clicks, so
  // that a click between the lines still selects the thought.
  const hit = mode === "list" ? { x: -R - 3, y: -R - 3, width: lw + 2 * R + 13, height: 2 * R + 6 }
    : { x: -LW / 2, y: -R - 3, width: LW, height: 2 * R + 42 };
  hit.class = "hit";
  const lines = wrap(textOf(t), lw);
  // The accessible name starts with what the node shows, as the label
  // may cut a word that does not fit, then says the rest.
  const shown = lines.join(" ");
  const full = short(textOf(t), 300);
  n.g.setAttribute("aria-label", t.thoughtNumber + " " + shown + (shown.endsWith("…") ? " (in full: " + full + ")" : "") +
    " (thought " + t.thoughtNumber + ", " + kindOf(t) + ")");
  n.labels = lines.map((line, i) => {
    // The label shows the start of the node's accessible name.
    const a = mode === "list" ? { class: "label list", x: R + 10, y: (lines.length === 1 ? 4 : -2) + i * 15 }
      : { class: "label", y: R + 17 + i * 15 };
    const e = svg("text", a, n.g);
    e.textContent = line + " ";
    return e;
  });
  n.labels.push(svg("rect", hit, n.g));
}

function nodeClass(t) {
  let cls = "node";
  if (t.branchId) cls += " branch";
  if (t.isRevision) cls += " revision";
  if (!t.nextThoughtNeeded) cls += " final";
  if (state.selected === t.id) cls += " selected";
  if (state.fresh.has(t.id)) cls += " fresh";
  return cls;
}

// renderGraph draws the graph. Only the thoughts near the visible part of
// the pane are in the DOM (a screen's height above and below): the
// browser lays out an SVG as a whole whenever it changes, so a session of
// a thousand thoughts drawn in full would make every new thought cost
// hundreds of milliseconds. The edges are one path per kind, drawn whole.
function renderGraph() {
  const host = $("graph");
  if (!state.session) return;
  if (state.nodes.size === 0) {
    host.replaceChildren(el("p", "hint", "No thought yet. This page updates as soon as the agent records one."));
    state.g = null;
    return;
  }
  const avail = Math.max(host.clientWidth - 24, 2 * M + CW);
  const key = avail + ":" + state.order.length;
  if (!state.layout || state.layoutKey !== key) {
    state.layout = layout(avail);
    state.layoutKey = key;
    state.layoutChanged = true;
  }
  const L = state.layout;
  if (!state.g || !host.contains(state.g.svg) || state.g.mode !== L.mode) {
    state.g = newGraph(L.mode);
    host.replaceChildren(state.g.svg);
    state.layoutChanged = true;
  }
  const G = state.g;
  if (state.layoutChanged) {
    state.layoutChanged = false;
    G.svg.setAttribute("viewBox", "0 0 " + L.width + " " + L.height);
    G.svg.setAttribute("width", Math.round(L.width * state.zoom));
    G.svg.setAttribute("height", Math.round(L.height * state.zoom));
    scheduleMinimap();
  }
  const win = visibleBand(host);
  // An empty path gets a class of its own, so that a selector such as
  // .edge.revision finds only lines that are drawn.
  setPath(G.main, "main", mainPath(L, win));
  setPath(G.branch, "branch", branchPath(L, win));
  const A = arcs(L);
  setPath(G.rev, "revision", A.rev);
  setPath(G.ref, "ref", A.ref);
  drawHeads(G, L, win);
  for (const id of state.order) {
    const p = L.pos.get(id);
    if (p && p.y >= win.top && p.y <= win.bottom) drawNode(G, L, id);
    else if (G.nodes.has(id)) { G.nodes.get(id).g.remove(); G.nodes.delete(id); }
  }
  state.fresh.clear();
}

// visibleBand is the band of layout y the graph draws: what the pane
// shows, and a screen's height more on each side.
function visibleBand(host) {
  const z = state.zoom;
  const h = host.clientHeight / z;
  const top = host.scrollTop / z;
  return { top: top - h - ROW, bottom: top + 2 * h + ROW };
}

let bandQueued = false;
function scheduleBand() {
  if (bandQueued) return;
  bandQueued = true;
  requestAnimationFrame(() => { bandQueued = false; if (state.view === "graph") renderGraph(); });
}

function drawNode(G, L, id) {
  const t = state.nodes.get(id);
  const p = L.pos.get(id);
  if (!p) return;
  let n = G.nodes.get(id);
  if (!n) {
    n = nodeElement(t);
    G.nodes.set(id, n);
    G.layer.appendChild(n.g);
  }
  setLabel(n, t, L.mode, p.lw);
  const tr = "translate(" + p.x + "," + p.y + ")";
  if (n.tr !== tr) { n.g.setAttribute("transform", tr); n.tr = tr; }
  const cls = nodeClass(t);
  if (n.cls !== cls) { n.g.setAttribute("class", cls); n.cls = cls; }
  if (t.critique && !n.crit) {
    const c = svg("circle", { class: "crit", r: 5, cx: R - 2, cy: -R + 2 }, n.g);
    svg("title", {}, c).textContent = "critique by " + t.critique.model;
    n.crit = true;
  }
}

function setPath(p, kind, d) {
  if (p.getAttribute("d") === d) return;
  p.setAttribute("d", d);
  p.setAttribute("class", d ? "edge " + kind : "edge-none");
}

function drawHeads(G, L, win) {
  const heads = [];
  for (const bl of L.blocks) {
    if (bl.headY < win.top || bl.headY > win.bottom) continue;
    const t = svg("text", { class: "branch-label", x: bl.x, y: bl.headY, "text-anchor": bl.anchor });
    t.textContent = fitOne("branch " + bl.b.id, bl.lw);
    heads.push(t);
  }
  G.heads.replaceChildren(...heads);
}

function onNodeKey(e, id) {
  const i = state.order.indexOf(id);
  let next = null;
  switch (e.key) {
    case "Enter":
    case " ":
      e.preventDefault();
      select(id);
      return;
    case "ArrowRight":
    case "ArrowDown":
      next = state.order[Math.min(i + 1, state.order.length - 1)];
      break;
    case "ArrowLeft":
    case "ArrowUp":
      next = state.order[Math.max(i - 1, 0)];
      break;
    default:
      return;
  }
  e.preventDefault();
  select(next);
  let n = $("graph").querySelector('[data-node-id="' + CSS.escape(next) + '"]');
  if (!n) { revealInGraph(next); n = $("graph").querySelector('[data-node-id="' + CSS.escape(next) + '"]'); }
  if (n) n.focus();
}

function select(id) {
  state.selected = id;
  refreshLinked();
  if (!state.details.has(id)) send("reasoning:" + state.current, "thought:detail", { thoughtId: id });
  if (state.view === "graph") renderGraph();
  else for (const p of $("reading").querySelectorAll(".para")) p.classList.toggle("selected", p.dataset.nodeId === id);
  renderDetail();
}

// ---- zoom, pan and the minimap ----

function setZoom(z, keepCenter) {
  const host = $("graph");
  const cx = (host.scrollLeft + host.clientWidth / 2) / state.zoom;
  const cy = (host.scrollTop + host.clientHeight / 2) / state.zoom;
  state.zoom = Math.min(3, Math.max(0.25, z));
  state.layoutChanged = true;
  renderGraph();
  if (keepCenter) {
    host.scrollLeft = cx * state.zoom - host.clientWidth / 2;
    host.scrollTop = cy * state.zoom - host.clientHeight / 2;
  }
}

// The minimap is redrawn at most twice a second: while thoughts stream
// in, it need not move with each.
let minimapTimer = null;
function scheduleMinimap() {
  if (minimapTimer) return;
  minimapTimer = setTimeout(() => { minimapTimer = null; if (state.layout) drawMinimap(state.layout); }, state.minimapDrawn ? 500 : 0);
}

function drawMinimap(L) {
  state.minimapDrawn = true;
  const mm = $("minimap");
  const show = state.view === "graph" && state.nodes.size > 100 && $("stage").clientWidth >= 640;
  mm.toggleAttribute("hidden", !show);
  if ($("stage").classList.contains("with-map") !== show) {
    // The pane's width changes: lay the graph out again.
    $("stage").classList.toggle("with-map", show);
    state.layoutKey = "";
    scheduleBand();
  }
  if (!show) return;
  mm.setAttribute("viewBox", "0 0 " + L.width + " " + L.height);
  mm.setAttribute("preserveAspectRatio", "xMidYMin meet");
  mm.style.height = Math.min(84 * L.height / L.width, $("stage").clientHeight * 0.7) + "px";
  let main = "", br = "";
  // A few hundred points draw the shape; more would only cost time.
  const step = Math.max(1, Math.ceil(state.main.length / 300));
  state.main.forEach((t, i) => {
    if (i % step && i !== state.main.length - 1) return;
    const p = L.pos.get(t.id);
    main += (i ? "L" : "M") + p.x + "," + p.y;
  });
  for (const b of state.branches.values()) {
    b.thoughts.forEach((t, i) => { const p = L.pos.get(t.id); if (p) br += (i ? "L" : "M") + p.x + "," + p.y; });
  }
  if (!mm.firstChild) {
    svg("path", { class: "mm-main" }, mm);
    svg("path", { class: "mm-branch" }, mm);
    svg("rect", { class: "mm-view" }, mm);
  }
  mm.children[0].setAttribute("d", main);
  mm.children[1].setAttribute("d", br);
  minimapView();
}

function minimapView() {
  const mm = $("minimap");
  if (mm.hasAttribute("hidden") || !mm.children[2]) return;
  const host = $("graph");
  const z = state.zoom;
  const r = mm.children[2];
  r.setAttribute("x", host.scrollLeft / z);
  r.setAttribute("y", host.scrollTop / z);
  r.setAttribute("width", host.clientWidth / z);
  r.setAttribute("height", host.clientHeight / z);
}

function minimapJump(e) {
  const L = state.layout;
  if (!L) return;
  const box = $("minimap").getBoundingClientRect();
  const scale = Math.min(box.width / L.width, box.height / L.height);
  const x = (e.clientX - box.left - (box.width - L.width * scale) / 2) / scale;
  const y = (e.clientY - box.top) / scale;
  const host = $("graph");
  host.scrollLeft = x * state.zoom - host.clientWidth / 2;
  host.scrollTop = y * state.zoom - host.clientHeight / 2;
}

function wirePan() {
  const host = $("graph");
  let drag = null;
  host.addEventListener("pointerdown", (e) => {
    if (e.pointerType !== "mouse" || e.button !== 0 || e.target.closest(".node")) return;
    drag = { x: e.clientX, y: e.clientY, l: host.scrollLeft, t: host.scrollTop };
    host.classList.add("panning");
  });
  window.addEventListener("pointermove", (e) => {
    if (!drag) return;
    host.scrollLeft = drag.l - (e.clientX - drag.x);
    host.scrollTop = drag.t - (e.clientY - drag.y);
  });
  window.addEventListener("pointerup", () => { drag = null; host.classList.remove("panning"); });
  host.addEventListener("wheel", (e) => {
    if (!e.ctrlKey) return;
    e.preventDefault();
    setZoom(state.zoom * (e.deltaY < 0 ? 1.15 : 1 / 1.15), true);
  }, { passive: false });
}

// ---- following the newest thought ----

function newestId() {
  return state.order.length ? state.order[state.order.length - 1] : null;
}

// newestRect is where the newest thought is, relative to the scrolling
// view's visible box.
function newestBox() {
  const id = newestId();
  if (!id) return null;
  if (state.view === "graph") {
    const p = state.layout && state.layout.pos.get(id);
    if (!p) return null;
    const z = state.zoom;
    const host = $("graph");
    const hb = host.getBoundingClientRect();
    const sb = state.g ? state.g.svg.getBoundingClientRect() : hb;
    const left = sb.left - hb.left + host.scrollLeft, top = sb.top - hb.top + host.scrollTop;
    const below = state.layout.mode === "list" ? R + 4 : R + 40;
    const side = state.layout.mode === "list" ? [-R, p.lw + R + 10] : [-LW / 2, LW / 2];
    return { top: top + (p.y - R - 4) * z, bottom: top + (p.y + below) * z, left: left + (p.x + side[0]) * z, right: left + (p.x + side[1]) * z };
  }
  const e = $("reading").querySelector('[data-node-id="' + CSS.escape(id) + '"]');
  if (!e) return null;
  const host = $("reading");
  const hb = host.getBoundingClientRect(), b = e.getBoundingClientRect();
  return { top: b.top - hb.top + host.scrollTop, bottom: b.bottom - hb.top + host.scrollTop, left: 0, right: 0 };
}

function viewHost() {
  return $(state.view === "read" ? "reading" : "graph");
}

function newestVisible() {
  const b = newestBox();
  if (!b) return true;
  const host = viewHost();
  const vis = b.bottom > host.scrollTop + 8 && b.top < host.scrollTop + host.clientHeight - 8;
  if (state.view !== "graph") return vis;
  return vis && b.right > host.scrollLeft && b.left < host.scrollLeft + host.clientWidth;
}

function scrollToNewest() {
  const b = newestBox();
  if (!b) return;
  const host = viewHost();
  const h = host.clientHeight;
  const was = host.scrollTop + "," + host.scrollLeft;
  // Keep some room under the newest thought: the next one comes there.
  if (b.bottom > host.scrollTop + h - 8 || b.top < host.scrollTop) {
    host.scrollTop = Math.max(0, Math.min(b.bottom + 60 - h, b.top - 8));
  }
  if (state.view === "graph" && (b.right > host.scrollLeft + host.clientWidth || b.left < host.scrollLeft)) {
    host.scrollLeft = Math.max(0, (b.left + b.right) / 2 - host.clientWidth / 2);
  }
  state.follow = true;
  // Draw the band now in sight, in this frame rather than the next.
  if (state.view === "graph" && was !== host.scrollTop + "," + host.scrollLeft) renderGraph();
}

function updateNewest() {
  $("newest").hidden = !state.current || !isLive() || state.follow || newestVisible();
}

function onViewScroll() {
  if (!state.current) return;
  state.follow = newestVisible();
  updateNewest();
  if (state.view === "graph") { minimapView(); scheduleBand(); }
}

// revealInGraph scrolls the graph to a thought and draws it.
function revealInGraph(id) {
  const p = state.layout && state.layout.pos.get(id);
  if (!p) return;
  const host = $("graph");
  host.scrollTop = Math.max(0, p.y * state.zoom - host.clientHeight / 2);
  renderGraph();
}

function revealSelected() {
  const id = state.selected;
  if (state.view === "graph" && !$("graph").querySelector('[data-node-id="' + CSS.escape(id) + '"]')) { revealInGraph(id); return; }
  const e = viewHost().querySelector('[data-node-id="' + CSS.escape(id) + '"]');
  if (e && e.scrollIntoView) e.scrollIntoView({ block: "nearest" });
}

// ---- the reading view ----

function renderReading() {
  const host = $("reading");
  if (!state.session) return;
  if (!state.readingDirty && host.firstChild) return;
  state.readingDirty = false;
  if (state.nodes.size === 0) {
    host.replaceChildren(el("p", "hint", "No thought yet. This page updates as soon as the agent records one."));
    state.readingDirty = true;
    return;
  }
  const doc = el("article", "doc");
  doc.setAttribute("aria-label", "The session as a document");
  const forks = new Map();
  for (const b of state.branches.values()) {
    const k = b.fromThoughtNumber;
    if (!forks.has(k)) forks.set(k, []);
    forks.get(k).push(b);
  }
  const placed = new Set();
  for (const t of state.main) {
    doc.appendChild(paragraph(t));
    if (t.isRevision) continue;
    for (const b of forks.get(t.thoughtNumber) || []) { doc.appendChild(thread(b)); placed.add(b.id); }
  }
  for (const b of state.branches.values()) if (!placed.has(b.id)) doc.appendChild(thread(b));
  host.replaceChildren(doc);
}

function thread(b) {
  const d = el("details", "thread");
  d.open = true;
  d.dataset.branchId = b.id;
  const s = el("summary", "", "Branch " + b.id + " · " + plural(b.thoughts.length, "thought", "thoughts") + ", from thought " + b.fromThoughtNumber);
  d.appendChild(s);
  for (const t of b.thoughts) d.appendChild(paragraph(t));
  return d;
}

function appendReading(t) {
  const doc = $("reading").querySelector(".doc");
  if (!doc) { state.readingDirty = true; return; }
  if (!t.branchId) { doc.appendChild(paragraph(t)); return; }
  const d = doc.querySelector('details.thread[data-branch-id="' + CSS.escape(t.branchId) + '"]');
  if (d) { d.appendChild(paragraph(t)); d.firstChild.textContent = "Branch " + t.branchId + " · " + plural(state.branches.get(t.branchId).thoughts.length, "thought", "thoughts") + ", from thought " + state.branches.get(t.branchId).fromThoughtNumber; return; }
  const b = state.branches.get(t.branchId);
  const fork = state.main.find((m) => m.thoughtNumber === b.fromThoughtNumber && !m.isRevision);
  const after = fork && doc.querySelector('.para[data-node-id="' + CSS.escape(fork.id) + '"]');
  const th = thread(b);
  if (after) after.after(th); else doc.appendChild(th);
}

function paragraph(t) {
  const s = el("section", "para" + (state.selected === t.id ? " selected" : ""));
  s.dataset.nodeId = t.id;
  s.id = "t-" + t.id.replace(/[^A-Za-z0-9_-]/g, "-");
  const h = el("header");
  h.appendChild(el("span", "n", "" + t.thoughtNumber));
  h.appendChild(el("span", "ty", typeOf(t)));
  const tm = el("time", "", clock(t.timestamp));
  tm.dateTime = t.timestamp;
  h.appendChild(tm);
  if (t.isRevision) {
    const orig = state.nodes.get(t.revisesNode);
    h.appendChild(orig ? nodeLink(orig, "revises thought " + t.revisesThought) : el("span", "", "revises thought " + t.revisesThought));
  }
  s.appendChild(h);
  const p = el("p");
  const orig = t.isRevision && state.nodes.get(t.revisesNode);
  const diff = orig ? wordDiff(textOf(orig), textOf(t)) : null;
  if (diff) {
    p.className = "diff";
    p.setAttribute("aria-label", "Changes from thought " + t.revisesThought);
    for (const d of diff) {
      if (d.op === "=") p.appendChild(document.createTextNode(d.s));
      else p.appendChild(el(d.op === "+" ? "ins" : "del", "", d.s));
    }
  } else {
    linkify(p, textOf(t));
  }
  s.appendChild(p);
  if (t.critique) {
    const c = el("blockquote", "crit");
    c.appendChild(el("strong", "", "Critique by " + t.critique.model + ": "));
    c.appendChild(document.createTextNode(t.critique.text));
    s.appendChild(c);
  }
  s.addEventListener("click", (e) => { if (!e.target.closest("a")) select(t.id); });
  return s;
}

function nodeLink(t, text) {
  const a = el("a", "", text);
  a.href = "#t-" + t.id.replace(/[^A-Za-z0-9_-]/g, "-");
  a.addEventListener("click", (e) => { e.preventDefault(); select(t.id); revealSelected(); });
  return a;
}

// wordDiff compares two texts word by word (a longest common subsequence
// of words, each with the space after it); within a changed stretch the
// removed words come first, then the added ones. null when the texts are
// too long to compare at reading speed.
function wordDiff(a, b) {
  const A = a.match(/\S+\s*|\s+/g) || [], B = b.match(/\S+\s*|\s+/g) || [];
  const n = A.length, m = B.length;
  if (n * m > 250000) return null;
  const w = m + 1;
  const L = new Uint16Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      L[i * w + j] = A[i] === B[j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
    }
  }
  const out = [];
  let del = "", ins = "";
  const flush = () => {
    if (del) out.push({ op: "-", s: del });
    if (ins) out.push({ op: "+", s: ins });
    del = ins = "";
  };
  const same = (s) => {
    flush();
    const last = out[out.length - 1];
    if (last && last.op === "=") last.s += s; else out.push({ op: "=", s: s });
  };
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (A[i] === B[j]) { same(A[i]); i++; j++; }
    else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) del += A[i++];
    else ins += B[j++];
  }
  while (i < n) del += A[i++];
  while (j < m) ins += B[j++];
  flush();
  return out;
}

const refPattern = /(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])|((?:[\w.-]+\/)*[\w.-]+\.(?:go|js|mjs|ts|tsx|jsx|py|rs|java|kt|c|h|cc|cpp|hpp|rb|php|swift|cs|md|json|ya?ml|toml|css|html|sh|sql|proto)(?::\d+(?:-\d+)?)?)(?![\w/])|\b([0-9a-f]{7,40})\b/g;

// linkify writes text into p with links: URLs; commit ids, to the thought
// of this session recorded as that commit, or into the code repository
// named by ?code=; file references (path.go:12) into that repository.
// Without ?code=, when the ledger is kept in the code's own repository,
// commits and files go to the commit and file pages (code.js).
function linkify(p, text) {
  const base = prefs.get("codeBase", "");
  let last = 0;
  for (const m of text.matchAll(refPattern)) {
    const [all, url, file, hex] = m;
    let node = null;
    if (url) {
      node = el("a", "", url);
      node.href = url;
      node.rel = "noopener noreferrer";
    } else if (file) {
      const [path, line] = file.split(":");
      node = base ? el("a", "", file) : el("code", "", file);
      if (base) node.href = base + "/blob/HEAD/" + path + (line ? "#L" + line.split("-")[0] : "");
      else if (state.codeRepo) {
        const [from, to] = (line || "").split("-").map((x) => parseInt(x, 10) || 0);
        node = link(fileHref(path, from, to), file);
      }
    } else if (hex && /[a-f]/.test(hex) && /[0-9]/.test(hex)) {
      const t = [...state.nodes.values()].find((n) => n.commit && n.commit.startsWith(hex));
      if (t) node = nodeLink(t, hex);
      else if (base) { node = el("a", "", hex); node.href = base + "/commit/" + hex; }
      else if (state.codeRepo) node = link(commitHref(hex), hex);
      else node = el("code", "", hex);
    }
    if (!node) continue;
    p.appendChild(document.createTextNode(text.slice(last, m.index)));
    p.appendChild(node);
    last = m.index + all.length;
  }
  p.appendChild(document.createTextNode(text.slice(last)));
}

// ---- the detail panel ----

function renderDetail() {
  const d = $("detail");
  const t = state.selected && state.nodes.get(state.selected);
  const linked = linkedSection();
  if (!t) {
    const hint = state.codePage
      ? "The sessions shown are those the commit names in a Thoughtbox-Session trailer, or that recorded a link to it (through an amend, a rebase, a cherry-pick or relink); open one to read all of its reasoning."
      : "Select a thought (click, or Tab to it and press Enter) to see its text, commit and author. Arrow keys move along the session.";
    d.replaceChildren(el("p", "hint", hint), ...(linked ? [linked] : []));
    return;
  }
  const info = state.details.get(t.id) || {};
  const h = el("h3", "", "Thought " + t.thoughtNumber + " · " + kindOf(t));
  const text = el("p", "text");
  linkify(text, t.thought);
  const dl = el("dl");
  const row = (k, v, code) => {
    if (v === undefined || v === null || v === "") return;
    dl.appendChild(el("dt", "", k));
    const dd = el("dd");
    if (code) dd.appendChild(el("code", "", String(v))); else dd.textContent = String(v);
    dl.appendChild(dd);
  };
  row("type", typeOf(t));
  row("node", t.id, true);
  row("commit", info.commit || t.commit, true);
  row("author", info.author ? info.author + (info.authorEmail ? " <" + info.authorEmail + ">" : "") : (info.id ? "" : "loading…"));
  row("time", when(t.timestamp));
  row("chain", t.branchId ? "branch " + t.branchId + " (from thought " + t.branchFromThought + ")" : "main");
  if (t.isRevision) row("revises", "thought " + t.revisesThought + (t.revisesNode ? " (" + t.revisesNode + ")" : ""));
  row("agent's estimate", plural(t.totalThoughts, "thought", "thoughts") + " in all, when it wrote this one");
  row("next thought needed", t.nextThoughtNeeded ? "yes" : "no (closes the session)");
  if (t.cipher && t.cipher.refs && t.cipher.refs.length) row("refers to", t.cipher.refs.map((r) => (r.revision ? "^" : "") + "S" + r.thought).join(", "));
  if (t.code && t.code.length) {
    dl.appendChild(el("dt", "", "code"));
    const dd = el("dd");
    dd.appendChild(codeRefList(t.code));
    dl.appendChild(dd);
  }
  const parts = [h, text, dl];
  const crit = info.critique || t.critique;
  if (crit) {
    const c = el("div", "critique");
    c.appendChild(el("strong", "", "Critique by " + crit.model + ": "));
    c.appendChild(document.createTextNode(crit.text));
    parts.push(c);
  }
  if (linked) parts.push(linked);
  d.replaceChildren(...parts);
}

// ---- the landing view ----

async function loadLanding() {
  const host = $("landing");
  let data;
  try {
    const r = await fetch("/ui/landing", { credentials: "same-origin" });
    if (!r.ok) throw new Error(r.status + " " + r.statusText);
    data = await r.json();
  } catch (e) {
    if (!state.current && !state.codePage) host.replaceChildren(el("p", "hint", "Choose a session to read its reasoning. Live sessions update as the agent writes."));
    return;
  }
  if (data.liveWindowSeconds) state.liveWindowMs = data.liveWindowSeconds * 1000;
  if (!state.current && !state.codePage) renderLanding(data);
  renderSessions();
}

function renderLanding(data) {
  const host = $("landing");
  const parts = [el("p", "hint", "Choose a session on the left, or one of the thoughts below.")];
  parts.push(el("h2", "", "Writing now"));
  const writers = el("ul");
  for (const w of data.writers || []) {
    const li = el("li");
    li.appendChild(sessionButton(w.sessionId, w.title));
    li.appendChild(el("div", "who", (w.author || "unknown agent") + " · " + plural(w.thoughtCount, "thought", "thoughts") + " · " + ago(w.updatedAt)));
    writers.appendChild(li);
  }
  parts.push((data.writers || []).length ? writers : el("p", "hint", "Nobody wrote in the last " + minutes(state.liveWindowMs) + "."));
  parts.push(el("h2", "", "Latest thoughts"));
  const latest = el("ol");
  for (const t of data.latest || []) {
    const li = el("li");
    li.appendChild(sessionButton(t.sessionId, t.title));
    li.appendChild(el("div", "txt", "Thought " + t.thoughtNumber + ": " + short(t.thought, 200)));
    li.appendChild(el("div", "who", ago(t.timestamp)));
    latest.appendChild(li);
  }
  parts.push((data.latest || []).length ? latest : el("p", "hint", "No thought recorded yet."));
  parts.push(el("h2", "", "Sessions per day"));
  parts.push(perDay(data.perDay || []));
  host.replaceChildren(...parts);
}

function sessionButton(id, title) {
  const b = el("button", "linkish", title || id);
  b.type = "button";
  b.dataset.sessionId = id;
  b.addEventListener("click", () => openSession(id));
  return b;
}

function perDay(days) {
  const wrap = el("div");
  const max = Math.max(1, ...days.map((d) => d.sessions));
  const bars = el("div", "bars");
  bars.setAttribute("role", "img");
  bars.setAttribute("aria-label", "Sessions per day: " + days.map((d) => d.day + " " + d.sessions).join(", "));
  for (const d of days) {
    const b = el("div", "bar");
    b.style.height = (100 * d.sessions / max) + "%";
    b.title = d.day + ": " + plural(d.sessions, "session", "sessions");
    bars.appendChild(b);
  }
  const axis = el("div", "bars-axis");
  if (days.length) {
    axis.appendChild(el("span", "", days[0].day));
    axis.appendChild(el("span", "", "busiest day: " + plural(max, "session", "sessions")));
    axis.appendChild(el("span", "", days[days.length - 1].day));
  }
  wrap.append(bars, axis);
  return wrap;
}

// ---- wiring ----

let searchTimer = null;
$("search").addEventListener("input", (e) => {
  state.search = e.target.value.trim();
  renderSessions();
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => requestHistory(0), 250);
});
$("status-filter").addEventListener("change", (e) => { state.status = e.target.value; requestHistory(0); renderSessions(); });
$("more").addEventListener("click", () => requestHistory(state.historyNext));
let authorTimer = null;
$("author-filter").addEventListener("input", (e) => {
  state.author = e.target.value.trim();
  renderSessions();
  clearTimeout(authorTimer);
  authorTimer = setTimeout(() => requestHistory(0), 250);
});
$("view-graph").addEventListener("click", () => setView("graph"));
$("view-read").addEventListener("click", () => setView("read"));
$("all-arcs").checked = state.allArcs;
$("all-arcs").addEventListener("change", (e) => { state.allArcs = e.target.checked; prefs.set("allArcs", state.allArcs ? "1" : "0"); renderGraph(); });
$("zoom-in").addEventListener("click", () => setZoom(state.zoom * 1.25, true));
$("zoom-out").addEventListener("click", () => setZoom(state.zoom / 1.25, true));
$("zoom-fit").addEventListener("click", () => setZoom(1, true));
$("newest").addEventListener("click", () => { scrollToNewest(); updateNewest(); });
$("graph").addEventListener("scroll", onViewScroll, { passive: true });
$("reading").addEventListener("scroll", onViewScroll, { passive: true });
$("minimap").addEventListener("click", minimapJump);
$("home").addEventListener("click", (e) => { e.preventDefault(); goHome(); });
wirePan();
let resizeTimer = null;
window.addEventListener("resize", () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(() => { if (state.view === "graph") renderGraph(); }, 150); });
window.addEventListener("popstate", route);
window.addEventListener("hashchange", route);

function goHome() {
  if (state.current) send("reasoning:" + state.current, "unsubscribe");
  state.current = null;
  state.codePage = null;
  resetSession();
  state.selected = null;
  if (location.hash) history.pushState(null, "", location.pathname);
  showStage();
  renderDetail();
  renderSessions();
  loadLanding();
}

function fromHash() {
  const m = /#session=([^&]+)/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

// A session leaves the live list when the live window passes it by.
setInterval(renderSessions, 30000);

state.current = fromHash();
if (state.current) {
  performance.mark("thoughtbox:session-open");
  $("session-head").replaceChildren(el("p", "hint", "Loading the session from the ledger…"));
}
showStage();
renderDetail();
connect();
loadCodeInfo().then(() => { const h = parseHash(); if (h.page) openCodePage(h.page); });
