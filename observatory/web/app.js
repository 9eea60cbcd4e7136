// Thoughtbox Observatory web UI. No build step and no dependencies: the
// graph is SVG laid out here (see doc/architecture.md for why).
// Every server message is [topic, event, payload].
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

const state = {
  ws: null,
  retry: 500,
  active: new Map(),   // id -> session (status active)
  history: [],         // sessions:list result
  historyTotal: 0,
  search: "",
  tag: "",
  current: null,       // session id shown
  session: null,       // its ObservatorySession
  main: [],            // main-chain thoughts in order
  branches: new Map(), // id -> {id, fromThoughtNumber, thoughts: []}
  nodes: new Map(),    // node id -> thought
  order: [],           // node ids in the order they arrived
  selected: null,
  expanded: new Set(),
  fresh: new Set(),
  details: new Map(),  // node id -> thought:detail payload
};

// The token, if the page was opened with ?token=, now lives in a cookie the
// server set; take it out of the address bar.
if (new URLSearchParams(location.search).has("token")) {
  history.replaceState(null, "", location.pathname + location.hash);
}

function send(topic, event, payload) {
  if (state.ws && state.ws.readyState === WebSocket.OPEN) {
    state.ws.send(JSON.stringify(payload === undefined ? [topic, event] : [topic, event, payload]));
  }
}

function setConn(text, cls) {
  const el = $("conn");
  el.textContent = text;
  el.className = "conn " + (cls || "");
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

function requestHistory(offset) {
  const q = { limit: 50, offset: offset };
  if (state.search) q.search = state.search;
  if (state.tag) q.tags = [state.tag];
  send("observatory", "list:sessions", q);
}

function handle(topic, event, p) {
  if (topic === "observatory") {
    switch (event) {
      case "sessions:active":
        state.active = new Map(p.sessions.map((s) => [s.id, s]));
        renderSessions();
        return;
      case "sessions:list":
        state.history = p.offset > 0 ? state.history.concat(p.sessions) : p.sessions;
        state.historyTotal = p.total;
        renderSessions();
        return;
      case "session:started":
        state.active.set(p.session.id, p.session);
        renderSessions();
        return;
      case "session:updated": {
        let s = state.active.get(p.sessionId) || state.history.find((h) => h.id === p.sessionId);
        if (s) {
          s = Object.assign({}, s, { thoughtCount: p.thoughtCount, updatedAt: p.updatedAt, status: "active", completedAt: null });
          state.active.set(s.id, s);
          state.history = state.history.filter((h) => h.id !== s.id);
        } else {
          send("observatory", "list:active");
        }
        renderSessions();
        return;
      }
      case "session:ended": {
        const s = state.active.get(p.sessionId);
        if (s) {
          state.active.delete(p.sessionId);
          state.history = [Object.assign({}, s, { status: "completed", completedAt: p.completedAt, thoughtCount: p.finalThoughtCount })]
            .concat(state.history.filter((h) => h.id !== p.sessionId));
        }
        renderSessions();
        return;
      }
      case "error":
        setConn("error: " + p.message, "lost");
        return;
    }
    return;
  }
  if (topic !== "reasoning:" + state.current) return;
  switch (event) {
    case "session:snapshot":
      loadSnapshot(p);
      return;
    case "thought:added":
    case "thought:revised":
    case "thought:branched":
      addThought(p.thought, p.branchId ? p : null);
      return;
    case "thought:critiqued": {
      const t = state.nodes.get(p.thoughtId);
      if (!t) return;
      t.critique = p.critique;
      const d = state.details.get(p.thoughtId);
      if (d) d.critique = p.critique;
      state.fresh.add(p.thoughtId);
      scheduleGraph();
      if (state.selected === p.thoughtId) renderDetail();
      return;
    }
    case "session:ended":
      if (state.session) {
        state.session.status = "completed";
        state.session.completedAt = p.completedAt;
        renderHead();
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

function loadSnapshot(p) {
  state.session = p.session;
  state.main = p.thoughts.slice();
  state.branches = new Map();
  state.nodes = new Map();
  state.order = [];
  state.details = new Map();
  for (const t of state.main) remember(t);
  for (const id of Object.keys(p.branches)) {
    const b = p.branches[id];
    state.branches.set(id, { id: id, fromThoughtNumber: b.fromThoughtNumber, origin: b.origin, thoughts: b.thoughts.slice() });
    for (const t of b.thoughts) remember(t);
  }
  state.order.sort((a, b) => state.nodes.get(a).timestamp.localeCompare(state.nodes.get(b).timestamp));
  if (state.selected && !state.nodes.has(state.selected)) state.selected = null;
  renderHead();
  renderGraph();
  renderDetail();
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
  renderHead();
  scheduleGraph();
}

let graphQueued = false;
function scheduleGraph() {
  if (graphQueued) return;
  graphQueued = true;
  requestAnimationFrame(() => { graphQueued = false; renderGraph(); });
}

// ---- rendering helpers ----

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
  if (!ts) return "";
  const d = new Date(ts);
  return d.toLocaleString();
}

function short(s, n) {
  s = (s || "").replace(/\s+/g, " ").trim();
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

// ---- session list ----

function matches(s) {
  if (state.tag && !(s.tags || []).some((t) => t.toLowerCase() === state.tag.toLowerCase())) return false;
  if (!state.search) return true;
  const hay = ((s.title || "") + " " + (s.description || "")).toLowerCase();
  return state.search.toLowerCase().split(/\s+/).every((w) => hay.includes(w));
}

function sessionItem(s) {
  const li = el("li");
  const b = el("button", "session");
  b.type = "button";
  b.dataset.sessionId = s.id;
  if (s.id === state.current) b.setAttribute("aria-current", "true");
  b.appendChild(el("span", "t", s.title || s.id));
  const m = el("span", "m");
  m.appendChild(el("span", "status " + s.status, s.status));
  m.appendChild(document.createTextNode(s.thoughtCount + " thoughts · " + when(s.updatedAt)));
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

function renderSessions() {
  const live = [...state.active.values()].filter(matches)
    .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
  const liveIds = new Set(live.map((s) => s.id));
  $("live").replaceChildren(...(live.length ? live.map(sessionItem) : [el("li", "hint", "No live session.")]));
  const hist = state.history.filter((s) => !liveIds.has(s.id) && !state.active.has(s.id));
  $("history").replaceChildren(...(hist.length ? hist.map(sessionItem) : [el("li", "hint", "Nothing here.")]));
  $("more").hidden = state.history.length >= state.historyTotal;
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

function setTag(t) {
  state.tag = t;
  requestHistory(0);
  renderSessions();
}

function openSession(id) {
  if (state.current && state.current !== id) send("reasoning:" + state.current, "unsubscribe");
  state.current = id;
  state.session = null;
  state.main = [];
  state.branches = new Map();
  state.nodes = new Map();
  state.order = [];
  state.selected = null;
  state.expanded = new Set();
  history.replaceState(null, "", "#session=" + encodeURIComponent(id));
  $("session-head").replaceChildren(el("p", "hint", "Loading the session from the ledger…"));
  $("graph").replaceChildren();
  renderDetail();
  renderSessions();
  send("reasoning:" + id, "subscribe");
}

function renderHead() {
  const s = state.session;
  if (!s) return;
  const h = $("session-head");
  const title = el("h2", "", s.title || s.id);
  const m = el("p", "m");
  m.appendChild(el("span", "status " + s.status, s.status));
  let text = s.thoughtCount + " thoughts · " + state.branches.size + " branches · started " + when(s.createdAt);
  if (s.completedAt) text += " · completed " + when(s.completedAt);
  m.appendChild(document.createTextNode(text));
  h.replaceChildren(title, m);
  $("legend").hidden = false;
}

// ---- the graph: the main chain as a snake, branches off their fork ----

// PAD leaves room for a label (about 110 px) centred on an edge node.
const DX = 150, DY = 96, LANE = 78, R = 17, PAD = 62;

function layout() {
  const width = Math.max($("graph").clientWidth - 40, 2 * DX + 2 * PAD);
  const cols = Math.max(2, Math.floor((width - 2 * PAD) / DX) + 1);
  const pos = new Map();
  // Branches belong to the row of their fork thought; each takes a lane
  // under that row, so rows grow to fit them.
  const mainIndex = new Map(state.main.map((t, i) => [t.thoughtNumber, i]));
  const rows = Math.max(1, Math.ceil(state.main.length / cols));
  const lanes = Array.from({ length: rows }, () => []);
  for (const b of state.branches.values()) {
    const i = mainIndex.has(b.fromThoughtNumber) ? mainIndex.get(b.fromThoughtNumber) : state.main.length - 1;
    lanes[Math.max(0, Math.floor(i / cols))].push(b);
  }
  let y = 44;
  let maxX = 2 * PAD + (cols - 1) * DX;
  const branchPos = [];
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const i = r * cols + c;
      if (i >= state.main.length) break;
      const x = PAD + (r % 2 === 0 ? c : cols - 1 - c) * DX;
      pos.set(state.main[i].id, { x: x, y: y, row: r });
    }
    let k = 0;
    for (const b of lanes[r]) {
      k++;
      const fork = state.main[mainIndex.has(b.fromThoughtNumber) ? mainIndex.get(b.fromThoughtNumber) : 0];
      const fp = fork && pos.get(fork.id);
      const fx = fp ? fp.x : PAD;
      // A branch runs from its fork toward the side with more room, and
      // turns back at the edge.
      const right = PAD + (cols - 1) * DX;
      let dir = fx - PAD > right - fx ? -1 : 1;
      let x = fx;
      const ly = y + k * LANE;
      b.thoughts.forEach((t, j) => {
        let nx = j === 0 ? fx + dir * DX * 0.5 : x + dir * DX * 0.85;
        if (nx > right + DX * 0.25 || nx < PAD - 1) { dir = -dir; nx = x + dir * DX * 0.85; }
        x = nx;
        pos.set(t.id, { x: x, y: ly, row: r });
      });
      branchPos.push({ b: b, y: ly, fx: fx });
    }
    y += DY + lanes[r].length * LANE;
  }
  for (const p of pos.values()) maxX = Math.max(maxX, p.x + PAD + 70);
  return { pos: pos, width: maxX, height: y + 40, branchPos: branchPos };
}

function edgePath(a, b, bend) {
  if (a.y === b.y && !bend) return "M" + a.x + "," + a.y + " L" + b.x + "," + b.y;
  const mx = (a.x + b.x) / 2, my = Math.min(a.y, b.y) - (bend || 0);
  if (bend) return "M" + a.x + "," + a.y + " Q" + mx + "," + my + " " + b.x + "," + b.y;
  return "M" + a.x + "," + a.y + " C" + a.x + "," + (a.y + b.y) / 2 + " " + b.x + "," + (a.y + b.y) / 2 + " " + b.x + "," + b.y;
}

function renderGraph() {
  const host = $("graph");
  if (!state.session) return;
  if (state.nodes.size === 0) {
    host.replaceChildren(el("p", "hint", "No thought yet. This page updates as soon as the agent records one."));
    return;
  }
  const L = layout();
  const s = svg("svg", { class: "g", width: L.width, height: L.height, viewBox: "0 0 " + L.width + " " + L.height, role: "group", "aria-label": "Reasoning graph" });
  const edges = svg("g", {}, s);
  const nodes = svg("g", {}, s);
  const P = L.pos;
  // main chain
  for (let i = 1; i < state.main.length; i++) {
    const a = P.get(state.main[i - 1].id), b = P.get(state.main[i].id);
    svg("path", { class: "edge main", d: edgePath(a, b) }, edges);
  }
  // branches: from the fork thought, then along the lane
  for (const bp of L.branchPos) {
    const ts = bp.b.thoughts;
    if (!ts.length) continue;
    const fork = state.nodes.get(ts[0].parentId) || state.main.find((t) => t.thoughtNumber === bp.b.fromThoughtNumber);
    let prev = fork ? P.get(fork.id) : null;
    for (const t of ts) {
      const p = P.get(t.id);
      if (prev) svg("path", { class: "edge branch", d: edgePath(prev, p) }, edges);
      prev = p;
    }
    const first = P.get(ts[0].id);
    const lbl = svg("text", { class: "branch-label", x: first.x, y: first.y - R - 8, "text-anchor": "middle" }, edges);
    lbl.textContent = bp.b.id;
  }
  // revisions and cipher references
  for (const t of state.nodes.values()) {
    const p = P.get(t.id);
    if (!p) continue;
    if (t.revisesNode && P.get(t.revisesNode)) {
      svg("path", { class: "edge revision", d: edgePath(p, P.get(t.revisesNode), 46) }, edges);
    }
    for (const r of (t.cipher && t.cipher.refs) || []) {
      if (r.revision || !r.node || !P.get(r.node) || r.node === t.parentId) continue;
      svg("path", { class: "edge ref", d: edgePath(p, P.get(r.node), 30) }, edges);
    }
  }
  for (const id of state.order) {
    const t = state.nodes.get(id);
    const p = P.get(id);
    if (!p) continue;
    let cls = "node";
    if (t.branchId) cls += " branch";
    if (t.isRevision) cls += " revision";
    if (!t.nextThoughtNeeded) cls += " final";
    if (state.selected === id) cls += " selected";
    if (state.fresh.has(id)) cls += " fresh";
    const kind = t.isRevision ? "revision of thought " + t.revisesThought : t.branchId ? "branch " + t.branchId : "main chain";
    const g = svg("g", { class: cls, transform: "translate(" + p.x + "," + p.y + ")", tabindex: "0", role: "button",
      "data-node-id": id, "aria-label": "Thought " + t.thoughtNumber + ", " + kind + ": " + short(t.thought, 80) }, nodes);
    svg("circle", { class: "dot", r: R }, g);
    svg("text", { class: "num" }, g).textContent = t.thoughtNumber;
    // A cipher line is labelled by its content; its step type is in the
    // detail panel.
    svg("text", { class: "label", y: R + 15 }, g).textContent = short(t.cipher ? t.cipher.content : t.thought, 20);
    if (t.critique) {
      const c = svg("circle", { class: "crit", r: 5, cx: R - 2, cy: -R + 2 }, g);
      svg("title", {}, c).textContent = "critique by " + t.critique.model;
    }
    if (state.expanded.has(id)) {
      const fo = svg("foreignObject", { x: -110, y: R + 22, width: 220, height: 120 }, g);
      const card = document.createElement("div");
      card.className = "card";
      card.textContent = t.thought;
      fo.appendChild(card);
    }
    g.addEventListener("click", () => select(id, true));
    g.addEventListener("keydown", (e) => onNodeKey(e, id));
  }
  state.fresh.clear();
  const focused = document.activeElement && document.activeElement.getAttribute && document.activeElement.getAttribute("data-node-id");
  host.replaceChildren(s);
  if (focused) {
    const again = host.querySelector('[data-node-id="' + CSS.escape(focused) + '"]');
    if (again) again.focus();
  }
}

function onNodeKey(e, id) {
  const i = state.order.indexOf(id);
  let next = null;
  switch (e.key) {
    case "Enter":
    case " ":
      e.preventDefault();
      select(id, true);
      return;
    case "ArrowRight":
    case "ArrowDown":
      next = state.order[Math.min(i + 1, state.order.length - 1)];
      break;
    case "ArrowLeft":
    case "ArrowUp":
      next = state.order[Math.max(i - 1, 0)];
      break;
    case "Escape":
      state.expanded.clear();
      scheduleGraph();
      return;
    default:
      return;
  }
  e.preventDefault();
  select(next, false);
  const n = $("graph").querySelector('[data-node-id="' + CSS.escape(next) + '"]');
  if (n) n.focus();
}

// select shows a thought in the detail panel; a second activation of the
// selected thought expands (or folds) its full text in the graph.
function select(id, toggle) {
  if (toggle && state.selected === id) {
    if (state.expanded.has(id)) state.expanded.delete(id); else state.expanded.add(id);
  }
  state.selected = id;
  if (!state.details.has(id)) send("reasoning:" + state.current, "thought:detail", { thoughtId: id });
  renderGraph();
  renderDetail();
}

function renderDetail() {
  const d = $("detail");
  const t = state.selected && state.nodes.get(state.selected);
  if (!t) {
    d.replaceChildren(el("p", "hint", "Select a thought (click, or Tab to it and press Enter) to see its text, commit and author. Arrow keys move along the session; Enter again expands the text in the graph."));
    return;
  }
  const info = state.details.get(t.id) || {};
  const h = el("h3", "", "Thought " + t.thoughtNumber + " of " + t.totalThoughts);
  const text = el("p", "text", t.thought);
  const dl = el("dl");
  const row = (k, v, code) => {
    if (v === undefined || v === null || v === "") return;
    dl.appendChild(el("dt", "", k));
    const dd = el("dd");
    if (code) dd.appendChild(el("code", "", String(v))); else dd.textContent = String(v);
    dl.appendChild(dd);
  };
  row("node", t.id, true);
  row("commit", info.commit || t.commit, true);
  row("author", info.author ? info.author + (info.authorEmail ? " <" + info.authorEmail + ">" : "") : (info.id ? "" : "loading…"));
  row("time", when(t.timestamp));
  row("chain", t.branchId ? "branch " + t.branchId + " (from thought " + t.branchFromThought + ")" : "main");
  if (t.isRevision) row("revises", "thought " + t.revisesThought + (t.revisesNode ? " (" + t.revisesNode + ")" : ""));
  row("next thought needed", t.nextThoughtNeeded ? "yes" : "no (closes the session)");
  if (t.cipher) row("cipher step", t.cipher.type + (t.cipher.refs && t.cipher.refs.length ? " → " + t.cipher.refs.map((r) => (r.revision ? "^" : "") + "S" + r.thought).join(", ") : ""));
  const parts = [h, text, dl];
  const crit = info.critique || t.critique;
  if (crit) {
    const c = el("div", "critique");
    c.appendChild(el("strong", "", "Critique by " + crit.model + ": "));
    c.appendChild(document.createTextNode(crit.text));
    parts.push(c);
  }
  d.replaceChildren(...parts);
}

// ---- wiring ----

let searchTimer = null;
$("search").addEventListener("input", (e) => {
  state.search = e.target.value.trim();
  renderSessions();
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => requestHistory(0), 250);
});
$("more").addEventListener("click", () => requestHistory(state.history.length));
let resizeTimer = null;
window.addEventListener("resize", () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(renderGraph, 150); });

const fromHash = /#session=([^&]+)/.exec(location.hash);
if (fromHash) state.current = decodeURIComponent(fromHash[1]);
if (state.current) $("session-head").replaceChildren(el("p", "hint", "Loading the session from the ledger…"));
connect();
