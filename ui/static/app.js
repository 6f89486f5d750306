// minik's live view. One Server-Sent Events stream brings a snapshot and
// then batches of changes; they are applied once per animation frame, and
// only the parts of the page they touch are drawn again.
"use strict";

const state = { pods: new Map(), nodes: new Map(), events: [], followKey: "", followNext: false, schedKey: "",
  services: new Map(), slices: new Map(), claims: new Map(), volumes: new Map(), classes: new Map() };
// services: redraw the whole list; svcs: redraw only these Services (a slice or a Service changed).
const dirty = { columns: new Set(), all: true, events: true, flow: false, sched: false, names: true, services: true, svcs: new Set(), volumes: true };
let queue = [];
let frame = 0;

const $ = (id) => document.getElementById(id);
const key = (p) => p.ns + "/" + p.name;
const esc = (s) => String(s ?? "").replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
const QUEUE = "\u0000queue"; // the pending column's id

function columnOf(p) { return p.node || QUEUE; }

function applyPod(type, p) {
  const k = key(p);
  const old = state.pods.get(k);
  if (old) dirty.columns.add(columnOf(old));
  if (type === "DELETED" || (old && old.node !== p.node)) dirty.names = true; // the pending list changes
  if ((old && old.claims) || p.claims) dirty.volumes = true; // a claim's users change
  if (type === "DELETED") { state.pods.delete(k); } else {
    if (!old) { dirty.names = true; if (state.followNext && type === "ADDED") { follow(k); state.followNext = false; $("follow-next").checked = false; } }
    state.pods.set(k, p);
    dirty.columns.add(columnOf(p));
  }
  if (k === state.followKey) dirty.flow = true;
  if (k === state.schedKey) dirty.sched = true;
}

function apply(msg) {
  if (msg.snapshot) {
    state.pods.clear(); state.nodes.clear();
    for (const p of msg.snapshot.pods) state.pods.set(key(p), p);
    for (const n of msg.snapshot.nodes) state.nodes.set(n.name, n);
    state.events = msg.snapshot.events || [];
    fill(state.services, msg.snapshot.services, key);
    fill(state.slices, msg.snapshot.slices, key);
    fill(state.claims, msg.snapshot.claims, key);
    fill(state.volumes, msg.snapshot.volumes, (v) => v.name);
    fill(state.classes, msg.snapshot.classes, (c) => c.name);
    dirty.all = dirty.events = dirty.names = dirty.flow = dirty.sched = dirty.services = dirty.volumes = true;
    return;
  }
  for (const m of msg.batch || []) {
    if (m.kind === "pod") applyPod(m.type, m.pod);
    else if (m.kind === "node") {
      if (m.type === "DELETED") state.nodes.delete(m.node.name); else state.nodes.set(m.node.name, m.node);
      dirty.all = true;
    } else if (m.kind === "event") {
      state.events.push(m.event);
      if (state.events.length > 5000) state.events.splice(0, state.events.length - 5000);
      dirty.events = true;
      const k = m.event.ns + "/" + m.event.name;
      if (k === state.followKey || m.event.kind !== "Pod") dirty.flow = true;
      if (k === state.schedKey) dirty.sched = true;
    } else if (m.kind === "service") {
      put(state.services, m.type, m.service, key);
      if (m.type === "MODIFIED") dirty.svcs.add(key(m.service)); else dirty.services = true; // the list's order changes
    } else if (m.kind === "slice") {
      const old = state.slices.get(key(m.slice));
      if (old) dirty.svcs.add(old.ns + "/" + old.service);
      put(state.slices, m.type, m.slice, key);
      dirty.svcs.add(m.slice.ns + "/" + m.slice.service);
    }
    else if (m.kind === "claim") { put(state.claims, m.type, m.claim, key); dirty.volumes = true; }
    else if (m.kind === "volume") { put(state.volumes, m.type, m.volume, (v) => v.name); dirty.volumes = true; }
    else if (m.kind === "class") { put(state.classes, m.type, m.class, (c) => c.name); dirty.volumes = true; }
  }
}

function fill(map, items, k) { map.clear(); for (const o of items || []) map.set(k(o), o); }
function put(map, type, o, k) { if (type === "DELETED") map.delete(k(o)); else map.set(k(o), o); }

function connect() {
  const es = new EventSource("api/stream");
  es.onopen = () => { $("status").textContent = "live"; };
  es.onerror = () => { $("status").textContent = "reconnecting…"; };
  es.onmessage = (e) => {
    queue.push(JSON.parse(e.data));
    if (!frame) frame = requestAnimationFrame(render);
  };
}

// render applies what arrived since the last frame and redraws.
function render() {
  frame = 0;
  for (const m of queue) apply(m);
  queue = [];
  if (dirty.all) drawColumns(); else for (const c of dirty.columns) drawColumn(c);
  dirty.all = false; dirty.columns.clear();
  if (dirty.events) { drawEvents(); dirty.events = false; }
  if (dirty.names) { drawNames(); dirty.names = false; }
  if (dirty.flow) { dirty.flow = false; loadFlow(); }
  if (dirty.sched) { dirty.sched = false; loadExplain(); }
  // The Services and Volumes lists are drawn only while they are shown.
  if ((dirty.services || dirty.svcs.size) && shown("services")) drawServices();
  if (dirty.volumes && shown("volumes")) drawVolumes();
}

const shown = (tab) => $(tab).classList.contains("active");
const redraw = () => { if (!frame) frame = requestAnimationFrame(render); };

// ---- Cluster ----
function podsByColumn() {
  const cols = new Map();
  for (const p of state.pods.values()) {
    const c = columnOf(p);
    if (!cols.has(c)) cols.set(c, []);
    cols.get(c).push(p);
  }
  return cols;
}

function drawColumns() {
  const root = $("columns");
  root.innerHTML = "";
  const names = [QUEUE, ...[...state.nodes.keys()].sort()];
  for (const name of names) {
    const col = document.createElement("div");
    col.className = "column" + (name === QUEUE ? " queue" : "");
    col.dataset.node = name === QUEUE ? "" : name;
    col.id = "col-" + name;
    root.appendChild(col);
  }
  const cols = podsByColumn();
  for (const name of cols.keys()) if (!state.nodes.has(name) && name !== QUEUE) {
    const col = document.createElement("div"); col.className = "column"; col.dataset.node = name; col.id = "col-" + name; root.appendChild(col);
  }
  for (const name of root.children) drawColumn(name.id.slice(4), cols);
}

function drawColumn(name, cols) {
  const col = document.getElementById("col-" + name);
  if (!col) { dirty.all = true; if (!frame) frame = requestAnimationFrame(render); return; }
  const pods = ((cols || podsByColumn()).get(name) || []).sort((a, b) => key(a) < key(b) ? -1 : 1);
  let head;
  if (name === QUEUE) head = `<h2>Pending queue (${pods.length})</h2><div class="meta">not yet bound to a node</div>`;
  else {
    const n = state.nodes.get(name);
    const cap = n ? `${esc(n.capacity.cpu)} cpu · ${esc(n.capacity.memory)} · ${esc(n.capacity.pods)} pods` : "";
    const cond = n ? Object.entries(n.conditions).filter(([t, s]) => (t === "Ready") !== (s === "True")).map(([t, s]) => `${esc(t)}=${esc(s)}`).join(" ") : "gone";
    const taints = n && n.taints ? n.taints.map(esc).join(", ") : "";
    head = `<h2>${esc(name)} (${pods.length})</h2><div class="meta">${cap}</div>` +
      `<div class="meta">${n && n.ready ? "Ready" : "NotReady"} ${cond}${n && n.unschedulable ? " · cordoned" : ""}</div>` +
      (taints ? `<div class="meta">taints: ${taints}</div>` : "");
  }
  // Virtualised: a column draws at most its first 200 cards, the rest scroll in as text counts.
  const shown = pods.slice(0, 200);
  const cards = shown.map((p) => `<div class="card ${esc(p.phase)}${p.deleting ? " deleting" : ""}${p.ready ? "" : " notready"}" data-pod="${esc(key(p))}" title="${esc(key(p))} ${esc(p.phase)} ${esc(p.reason)}">` +
    `${esc(p.name)}${p.restarts ? `<span class="restarts">↻${p.restarts}</span>` : ""}` +
    `${p.claims ? `<span class="pvc" title="mounts ${esc(p.claims.join(", "))}">pvc</span>` : ""}</div>`).join("");
  const more = pods.length > shown.length ? `<div class="meta">…and ${pods.length - shown.length} more</div>` : "";
  col.innerHTML = head + `<div class="cards">${cards}${more}</div>`;
}

$("columns").addEventListener("click", (e) => {
  const card = e.target.closest(".card");
  if (card) { follow(card.dataset.pod); showTab("flow"); }
});

// ---- Flow ----
function follow(k) {
  state.followKey = k; $("flow-pod").value = k; dirty.flow = true;
  const p = state.pods.get(k);
  if (p && !p.node) { state.schedKey = k; $("sched-pod").value = k; dirty.sched = true; }
  if (!frame) frame = requestAnimationFrame(render);
}

const fmtTime = (t) => { const d = new Date(t); return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0"); };

let flowSeq = 0;
async function loadFlow() {
  const k = state.followKey;
  if (!k) return;
  const [ns, name] = k.split("/");
  const seq = ++flowSeq;
  const r = await fetch(`api/flow?ns=${encodeURIComponent(ns)}&name=${encodeURIComponent(name)}`);
  if (seq !== flowSeq) return;
  if (!r.ok) { $("flow-title").textContent = k + ": not seen (yet)"; $("steps").innerHTML = ""; return; }
  const f = await r.json();
  $("flow-title").textContent = `${f.namespace}/${f.name}` + (f.node ? ` on ${f.node}` : "") + (f.phase ? ` · ${f.phase}` : "") + (f.deleted ? " · deleted" : "");
  $("steps").innerHTML = f.steps.map((s) => {
    const lit = s.at ? " lit" : "", skipped = s.skipped ? " skipped" : "";
    return `<li class="step${lit}${skipped}" data-step="${s.n}" data-name="${esc(s.name)}" data-at="${s.at ? Date.parse(s.at) : ""}"><div class="n">${s.n}</div><div>${esc(s.name)}</div>` +
      `<div class="component">${esc(s.component)}</div>` +
      (s.at ? `<div class="time">${fmtTime(s.at)}</div><div class="since">${s.sinceMs ? "+" + s.sinceMs.toFixed(1) + " ms" : ""}</div>` : "") +
      `<div class="detail">${esc(s.detail)}</div>` +
      (s.name === "scheduled" ? `<a href="#" class="verdicts" data-pod="${esc(k)}">the scheduler's verdicts per node</a>` : "") + `</li>`;
  }).join("");
  $("flow-waiting").textContent = f.waiting ? "waiting: " + f.waiting : "";
}

$("steps").addEventListener("click", (e) => {
  const a = e.target.closest("a.verdicts"); if (!a) return;
  e.preventDefault(); state.schedKey = a.dataset.pod; $("sched-pod").value = state.schedKey; showTab("scheduling"); loadExplain();
});
$("flow-pod").addEventListener("change", (e) => follow(e.target.value.trim()));
$("follow-next").addEventListener("change", (e) => { state.followNext = e.target.checked; });

function drawNames() {
  const opts = [...state.pods.keys()].sort().slice(0, 3000).map((k) => `<option value="${esc(k)}">`).join("");
  $("pod-names").innerHTML = opts;
  const pending = [...state.pods.values()].filter((p) => !p.node).map(key).sort();
  $("pending-list").innerHTML = pending.slice(0, 50).map((k) => `<a href="#" data-pod="${esc(k)}">${esc(k)}</a>`).join(" ") || "none";
}

// ---- Scheduling ----
$("pending-list").addEventListener("click", (e) => {
  const a = e.target.closest("a"); if (!a) return;
  e.preventDefault(); state.schedKey = a.dataset.pod; $("sched-pod").value = state.schedKey; loadExplain();
});
$("sched-pod").addEventListener("change", (e) => { state.schedKey = e.target.value.trim(); loadExplain(); });

let schedSeq = 0;
async function loadExplain() {
  const k = state.schedKey;
  if (!k) return;
  const [ns, name] = k.split("/");
  const seq = ++schedSeq;
  const r = await fetch(`api/explain?ns=${encodeURIComponent(ns)}&name=${encodeURIComponent(name)}`);
  if (seq !== schedSeq) return;
  if (!r.ok) { $("sched-message").textContent = k + ": no such pod"; $("filter-table").innerHTML = ""; $("score-table").innerHTML = ""; return; }
  const e = await r.json();
  $("sched-message").textContent = (e.boundTo ? `bound to ${e.boundTo}; ` : "") + (e.chosen ? `the scheduler would choose ${e.chosen}` : "") + (e.message ? e.message : "") + (e.preFilter ? " (PreFilter: " + e.preFilter + ")" : "");
  const filters = e.filters || [];
  let h = `<tr><th>node</th>${filters.map((f) => `<th>${esc(f)}</th>`).join("")}<th>feasible</th></tr>`;
  for (const n of e.nodes || []) {
    h += `<tr class="${n.node === e.chosen ? "chosen" : ""}" data-node="${esc(n.node)}"><td>${esc(n.node)}</td>` + filters.map((f) => {
      const v = n.verdicts[f];
      if (v === undefined) return `<td></td>`;
      if (v === "") return `<td class="pass">✓</td>`;
      if (v === "skip") return `<td class="skip">skip</td>`;
      return `<td class="fail" data-plugin="${esc(f)}">${esc(v)}</td>`;
    }).join("") + `<td>${n.feasible ? "yes" : "no"}</td></tr>`;
  }
  $("filter-table").innerHTML = h;
  const scored = e.scored || [];
  $("scores-title").textContent = scored.length ? "Scores of the feasible nodes (normalised 0–100, × weight)" : "";
  if (!scored.length) { $("score-table").innerHTML = ""; return; }
  let s = `<tr><th>plugin</th><th>weight</th>${scored.map((n) => `<th>${esc(n)}</th>`).join("")}</tr>`;
  for (const p of e.scores || []) s += `<tr><td>${esc(p.plugin)}</td><td>${p.weight}</td>${scored.map((_, i) => `<td>${p.skip ? "skip" : (p.scores || [])[i] ?? ""}</td>`).join("")}</tr>`;
  s += `<tr><th>total</th><th></th>${scored.map((n) => `<th>${e.totals ? e.totals[n] : ""}</th>`).join("")}</tr>`;
  $("score-table").innerHTML = s;
}

// ---- Services: each Service with the endpoints of its EndpointSlices ----
// Capped like the cluster's columns: the first MAX_ROWS Services that
// match the filter, each with its first MAX_EPS endpoints.
const MAX_ROWS = 200, MAX_EPS = 100;
const podLink = (ns, name) => `<a href="#" class="podlink" data-pod="${esc(ns + "/" + name)}">${esc(name)}</a>`;
const more = (n, what) => n > 0 ? `<div class="meta">…and ${n} more ${what} (filter to narrow)</div>` : "";

function endpointsOf(s) {
  const eps = [];
  for (const sl of state.slices.values()) if (sl.ns === s.ns && sl.service === s.name) eps.push(...sl.endpoints);
  return eps.sort((a, b) => (a.pod || a.addresses[0]) < (b.pod || b.addresses[0]) ? -1 : 1);
}

function svcHTML(s, eps) {
  const ports = (s.ports || []).map((p) => `${p.name ? esc(p.name) + " " : ""}${p.port}→${esc(p.targetPort)}/${esc(p.protocol)}${p.nodePort ? ` (nodePort ${p.nodePort})` : ""}`).join(", ");
  const sel = s.selector ? Object.entries(s.selector).map(([k, v]) => esc(k + "=" + v)).join(",") : "none (its EndpointSlices are written directly, not from pods)";
  const ready = eps.filter((e) => e.ready).length;
  const rows = eps.slice(0, MAX_EPS).map((e) => {
    const cls = e.terminating ? "terminating" : e.ready ? "ready" : "notready";
    return `<tr class="ep ${cls}" data-pod="${e.pod ? esc(s.ns + "/" + e.pod) : ""}" data-node="${esc(e.node)}"><td>${esc(e.addresses.join(", "))}</td>` +
      `<td>${e.pod ? podLink(s.ns, e.pod) : ""}</td><td class="node">${esc(e.node)}</td>` +
      `<td>${e.ready ? "✓" : "✗"}</td><td>${e.serving ? "✓" : "✗"}</td><td>${e.terminating ? "yes" : ""}</td></tr>`;
  }).join("");
  return `<div class="svc" data-svc="${esc(key(s))}"><div class="svc-head"><b>${esc(key(s))}</b> <span class="type">${esc(s.type)}</span>` +
    (s.clusterIP ? ` clusterIP ${esc(s.clusterIP)}` : "") + (s.externalName ? ` → ${esc(s.externalName)}` : "") +
    (ports ? ` · ports ${ports}` : "") + ` · selector ${sel}</div>` +
    `<div class="meta">${ready} of ${eps.length} endpoints ready${eps.length ? " (only ready ones get new traffic)" : ""}</div>` +
    (eps.length ? `<table class="grid eps"><tr><th>address</th><th>pod</th><th>node</th><th>ready</th><th>serving</th><th>terminating</th></tr>${rows}</table>` : "") +
    more(eps.length - MAX_EPS, "endpoints") + `</div>`;
}

// drawServices redraws the list, or, when only some Services' endpoints
// changed and no filter is set, just those Services' boxes.
function drawServices() {
  const f = $("svc-filter").value.trim().toLowerCase();
  if (!dirty.services && !f) {
    for (const k of dirty.svcs) {
      const el = $("svc-list").querySelector(`.svc[data-svc="${CSS.escape(k)}"]`);
      const s = state.services.get(k);
      if (el && s) el.outerHTML = svcHTML(s, endpointsOf(s));
    }
    dirty.svcs.clear();
    return;
  }
  dirty.services = false; dirty.svcs.clear();
  const bySvc = new Map();
  for (const sl of state.slices.values()) {
    const k = sl.ns + "/" + sl.service;
    if (!bySvc.has(k)) bySvc.set(k, []);
    bySvc.get(k).push(...sl.endpoints);
  }
  const html = [];
  let matched = 0;
  for (const s of [...state.services.values()].sort((a, b) => key(a) < key(b) ? -1 : 1)) {
    const eps = (bySvc.get(key(s)) || []).sort((a, b) => (a.pod || a.addresses[0]) < (b.pod || b.addresses[0]) ? -1 : 1);
    if (f && !`${key(s)} ${s.type} ${s.clusterIP} ${eps.map((e) => `${e.addresses.join(" ")} ${e.pod} ${e.node}`).join(" ")}`.toLowerCase().includes(f)) continue;
    if (++matched <= MAX_ROWS) html.push(svcHTML(s, eps));
  }
  $("svc-count").textContent = `${matched} of ${state.services.size} services`;
  $("svc-list").innerHTML = html.join("") + more(matched - MAX_ROWS, "services");
}
$("svc-filter").addEventListener("input", () => { dirty.services = true; redraw(); });

// ---- Volumes: claims with their volumes and the pods using them ----
function drawVolumes() {
  dirty.volumes = false;
  $("class-list").innerHTML = "StorageClasses: " + ([...state.classes.values()].sort((a, b) => a.name < b.name ? -1 : 1).map((c) =>
    `<span class="sc" data-class="${esc(c.name)}"><b>${esc(c.name)}</b>${c.default ? " (default)" : ""} ${esc(c.provisioner)} · ${esc(c.bindingMode)}${c.reclaim ? " · " + esc(c.reclaim) : ""}</span>`).join(" ") || "none");
  const users = new Map(); // ns/claim → pods mounting it
  for (const p of state.pods.values()) for (const c of p.claims || []) {
    const k = p.ns + "/" + c;
    if (!users.has(k)) users.set(k, []);
    users.get(k).push(p);
  }
  const f = $("vol-filter").value.trim().toLowerCase();
  let h = `<tr><th>claim</th><th>phase</th><th>class</th><th>request</th><th>selected node</th><th>volume</th><th>capacity</th><th>volume phase</th><th>reclaim</th><th>volume's node</th><th>used by</th></tr>`;
  let matched = 0;
  for (const c of [...state.claims.values()].sort((a, b) => key(a) < key(b) ? -1 : 1)) {
    const v = c.volume ? state.volumes.get(c.volume) : null;
    const pods = (users.get(key(c)) || []).sort((a, b) => a.name < b.name ? -1 : 1);
    if (f && !`${key(c)} ${c.phase} ${c.class} ${c.selectedNode} ${c.volume} ${v ? v.node : ""} ${pods.map((p) => p.name).join(" ")}`.toLowerCase().includes(f)) continue;
    if (++matched > MAX_ROWS) continue;
    h += `<tr class="claim ${esc(c.phase)}${c.deleting ? " deleting" : ""}" data-claim="${esc(key(c))}"><td>${esc(key(c))}</td><td class="phase">${esc(c.phase)}${c.deleting ? " (deleting)" : ""}</td>` +
      `<td>${esc(c.class)}</td><td>${esc(c.request)}</td><td class="selected">${esc(c.selectedNode)}</td>` +
      `<td class="volume">${esc(c.volume)}</td><td>${v ? esc(v.capacity) : ""}</td><td class="vphase">${v ? esc(v.phase) : ""}</td><td>${v ? esc(v.reclaim) : ""}</td>` +
      `<td class="vnode">${v ? esc(v.node) : ""}</td><td class="users">${pods.map((p) => podLink(p.ns, p.name) + (p.node ? ` on ${esc(p.node)}` : "")).join(", ")}</td></tr>`;
  }
  $("claim-table").innerHTML = h + (matched > MAX_ROWS ? `<tr><td colspan="11">…and ${matched - MAX_ROWS} more claims (filter to narrow)</td></tr>` : "");
  $("vol-count").textContent = `${matched} of ${state.claims.size} claims`;
  // Volumes no listed claim holds: Available, Released, or waiting for theirs.
  const free = [...state.volumes.values()].filter((v) => !v.claim || !state.claims.has(v.claim)).sort((a, b) => a.name < b.name ? -1 : 1);
  $("free-title").textContent = free.length ? `PersistentVolumes without a claim (${free.length})` : "";
  $("free-table").innerHTML = free.length ? `<tr><th>volume</th><th>capacity</th><th>phase</th><th>reclaim</th><th>class</th><th>claimRef</th><th>node</th></tr>` +
    free.slice(0, MAX_ROWS).map((v) => `<tr data-volume="${esc(v.name)}"><td>${esc(v.name)}</td><td>${esc(v.capacity)}</td><td>${esc(v.phase)}</td><td>${esc(v.reclaim)}</td>` +
      `<td>${esc(v.class)}</td><td>${esc(v.claim)}</td><td>${esc(v.node)}</td></tr>`).join("") : "";
}
$("vol-filter").addEventListener("input", () => { dirty.volumes = true; redraw(); });

// A pod named in the Services or Volumes panel: follow it, as a card click does.
for (const id of ["svc-list", "claim-table"]) $(id).addEventListener("click", (e) => {
  const a = e.target.closest("a.podlink"); if (!a) return;
  e.preventDefault(); follow(a.dataset.pod); showTab("flow");
});

// ---- Events (virtualised: only the rows in view exist) ----
const ROW = 22;
let filtered = [];
function drawEvents() {
  const f = $("event-filter").value.trim().toLowerCase();
  filtered = f ? state.events.filter((e) => `${e.kind} ${e.ns}/${e.name} ${e.reason} ${e.message} ${e.source}`.toLowerCase().includes(f)) : state.events;
  $("event-count").textContent = `${filtered.length} events`;
  $("event-spacer").style.height = filtered.length * ROW + "px";
  drawEventRows();
}
function drawEventRows() {
  const vp = $("event-viewport");
  const first = Math.max(0, Math.floor(vp.scrollTop / ROW) - 5);
  const last = Math.min(filtered.length, first + Math.ceil(vp.clientHeight / ROW) + 10);
  const rows = [];
  for (let i = first; i < last; i++) {
    const e = filtered[filtered.length - 1 - i]; // newest first
    rows.push(`<div class="erow ${esc(e.type)}"><span class="t">${fmtTime(e.time)}</span><b>${esc(e.reason)}</b> ${esc(e.kind)} ${esc(e.ns ? e.ns + "/" : "")}${esc(e.name)} — ${esc(e.message)} <i>${esc(e.source)}</i></div>`);
  }
  const box = $("event-rows");
  box.style.top = first * ROW + "px";
  box.innerHTML = rows.join("");
}
$("event-viewport").addEventListener("scroll", drawEventRows);
$("event-filter").addEventListener("input", () => { dirty.events = true; if (!frame) frame = requestAnimationFrame(render); });

// ---- tabs ----
function showTab(name) {
  for (const b of document.querySelectorAll("nav button")) b.classList.toggle("active", b.dataset.tab === name);
  for (const s of document.querySelectorAll(".tab")) s.classList.toggle("active", s.id === name);
  if (name === "events") drawEventRows();
  if (name === "services" || name === "volumes") redraw();
}
for (const b of document.querySelectorAll("nav button")) b.addEventListener("click", () => showTab(b.dataset.tab));

connect();
