// turnloom inspector: the page's one script. No framework, no build step.
"use strict";

const STATUS_STATE = { success: "done", error: "failed", cancelled: "cancelled", pause_timed_out: "pause_timed_out" };
const STUCK_S = 15;
const page = { agents: new Map(), version: 0, socket: null, chosen: null, detail: null, full: null, machine: null, svg: false, graphSvg: new Map(), machineSvg: null };

const $ = (id) => document.getElementById(id);
// Writes only what differs: an unchanged page is not laid out or painted again.
const setText = (node, text) => { if (node.textContent !== text) node.textContent = text; };
const setDisabled = (node, disabled) => { if (node.disabled !== disabled) node.disabled = disabled; };
const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  for (const child of children) node.append(child);
  return node;
};

async function api(path, body) {
  const options = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const response = await fetch(path, options);
  if (response.status === 401) { showLogin(); throw new Error("unauthorized"); }
  return response;
}

function showLogin() { $("login").hidden = false; $("main").hidden = true; }

$("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const response = await fetch("/api/login", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ key: $("key").value }) });
  if (!response.ok) { $("login-error").textContent = (await response.json()).message; return; }
  $("login").hidden = true; $("main").hidden = false; start();
});

// --- the agent list ---------------------------------------------------------------------------

function rowText(agent) {
  return [agent.id, agent.graph, agent.state, agent.node, Object.entries(agent.tags).map(([k, v]) => `${k}=${v}`).join(" ")].join(" ").toLowerCase();
}

// Rows are kept per agent, made once; a redraw writes only the cells whose text changed, and
// moves only the rows whose place in the order changed.
const rows = new Map();

function rowOf(agent) {
  let row = rows.get(agent.id);
  if (row === undefined) {
    row = el("tr", {},
      el("td", { textContent: agent.id }), el("td"), el("td", { className: "state" }),
      el("td", { className: "node" }), el("td", { className: "paused-for" }), el("td"));
    row.dataset.agentId = agent.id;
    row.addEventListener("click", () => choose(agent.id));
    rows.set(agent.id, row);
  }
  const pausedFor = agent.paused_for_s === null ? "" : `${agent.paused_for_s.toFixed(1)} s`;
  const stuck = agent.paused_for_s !== null && agent.paused_for_s >= STUCK_S;
  const className = `s-${agent.state}${stuck ? " stuck" : ""}${agent.id === page.chosen ? " chosen" : ""}`;
  if (row.className !== className) row.className = className;
  const cells = row.cells;
  setText(cells[1], agent.graph);
  setText(cells[2], agent.state);
  setText(cells[3], agent.node);
  setText(cells[4], pausedFor);
  setText(cells[5], agent.durable ? "yes" : "");
  return row;
}

// Sorted by how long each agent has been paused, longest first; a pause of less than
// SORT_AFTER_S does not move its row yet, so that rows do not jump for pauses that come and go.
const SORT_AFTER_S = 1;
const pausedKey = (agent) => (agent.paused_for_s !== null && agent.paused_for_s >= SORT_AFTER_S ? agent.paused_for_s : -1);

function renderList() {
  const filter = $("filter").value.trim().toLowerCase();
  const pausedOnly = $("only-paused").checked;
  const agents = [...page.agents.values()].sort((a, b) => pausedKey(b) - pausedKey(a) || a.id - b.id);
  const shown = [];
  let paused = 0;
  for (const agent of agents) {
    if (agent.state === "paused") paused += 1;
    if (pausedOnly && agent.state !== "paused") continue;
    if (filter && !rowText(agent).includes(filter)) continue;
    shown.push(rowOf(agent));
  }
  for (const id of rows.keys()) if (!page.agents.has(id)) rows.delete(id);
  const body = $("agents").tBodies[0];
  // Moved one by one: re-inserting every row would make the browser lay them all out again.
  shown.forEach((row, i) => { if (body.children[i] !== row) body.insertBefore(row, body.children[i] ?? null); });
  while (body.children.length > shown.length) body.lastChild.remove();
  setText($("counts"), `${page.agents.size} agents, ${paused} paused`);
}

// --- drawings ---------------------------------------------------------------------------------

// Without Graphviz on the server the page lays a graph out itself: columns by distance from
// the start, boxes in order, straight arrows.
function drawLayered(names, edges, start, labels) {
  const depth = new Map([[start, 0]]);
  const queue = [start];
  while (queue.length) {
    const name = queue.shift();
    for (const edge of edges) if (edge.source === name && !depth.has(edge.target)) { depth.set(edge.target, depth.get(name) + 1); queue.push(edge.target); }
  }
  let deepest = Math.max(0, ...depth.values());
  for (const name of names) if (!depth.has(name)) depth.set(name, ++deepest);
  const columns = new Map();
  for (const name of names) { const d = depth.get(name); if (!columns.has(d)) columns.set(d, []); columns.get(d).push(name); }
  const W = 150, H = 44, GX = 60, GY = 24, at = new Map();
  for (const [d, column] of columns) column.forEach((name, i) => at.set(name, { x: 10 + d * (W + GX), y: 10 + i * (H + GY) }));
  const width = 20 + (Math.max(...columns.keys()) + 1) * (W + GX), height = 20 + Math.max(...[...columns.values()].map((c) => c.length)) * (H + GY);
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.innerHTML = `<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0L10,5L0,10z"/></marker></defs>`;
  for (const edge of edges) {
    const a = at.get(edge.source), b = at.get(edge.target);
    if (!a || !b) continue;
    const line = document.createElementNS(ns, "line");
    Object.entries({ x1: a.x + W, y1: a.y + H / 2, x2: b.x, y2: b.y + H / 2, stroke: "#555", "marker-end": "url(#arrow)" }).forEach(([k, v]) => line.setAttribute(k, v));
    svg.append(line);
  }
  for (const name of names) {
    const p = at.get(name);
    const g = document.createElementNS(ns, "g");
    g.setAttribute("class", "node");
    g.innerHTML = `<title></title><rect x="${p.x}" y="${p.y}" width="${W}" height="${H}" rx="8" fill="#fff" stroke="#333"></rect><text x="${p.x + W / 2}" y="${p.y + H / 2 + 5}" text-anchor="middle"></text>`;
    g.querySelector("title").textContent = name;
    g.querySelector("text").textContent = labels ? labels(name) : name;
    svg.append(g);
  }
  return svg;
}

async function svgOf(url) {
  const response = await api(url);
  return response.ok ? response.text() : null;
}

async function graphDrawing(detail) {
  const key = detail.graph;
  if (!page.graphSvg.has(key)) {
    let svg = page.svg ? await svgOf(`/api/agents/${detail.id}/graph.svg`) : null;
    if (svg === null) {
      const data = detail.graph_data;
      const types = new Map(data.nodes.map((n) => [n.name, n.type]));
      const names = [...data.nodes.map((n) => n.name), "__end__"];
      svg = drawLayered(names, data.edges, data.start, (n) => (types.has(n) ? `${n} (${types.get(n)})` : "END")).outerHTML;
    }
    page.graphSvg.set(key, svg);
  }
  return page.graphSvg.get(key);
}

async function machineDrawing() {
  if (page.machineSvg === null) {
    let svg = page.svg ? await svgOf("/api/machine.svg") : null;
    if (svg === null) {
      const m = page.machine;
      svg = drawLayered(m.states, m.transitions.map((t) => ({ source: t.source, target: t.dest })), m.initial).outerHTML;
    }
    page.machineSvg = svg;
  }
  return page.machineSvg;
}

function light(container, name, cls = "lit") {
  for (const g of container.querySelectorAll("g.node")) {
    const title = g.querySelector("title");
    g.classList.toggle(cls, Boolean(name) && title !== null && title.textContent === name);
  }
}

// --- the chosen agent -------------------------------------------------------------------------

async function choose(id) {
  page.chosen = id;
  drawnTurns.clear();
  watch();
  const detail = await fetchDetail(true);
  renderList();
  if (detail !== null) await renderDetail(detail);
}

// Tell the server which agent this page shows: it then says when that agent changed.
function watch() {
  if (page.socket !== null && page.socket.readyState === WebSocket.OPEN) page.socket.send(JSON.stringify({ watch: page.chosen }));
}

// The chosen agent as the server has it now: in full (graph, params) when first chosen, else
// only what changes, leaving out the ended turns the page already shows. null if it is gone.
async function fetchDetail(full) {
  if (page.chosen === null) return null;
  const id = page.chosen;
  const have = [...drawnTurns.keys()].join(",");
  const response = await api(`/api/agents/${id}?full=${full ? 1 : 0}&have=${have}`);
  if (id !== page.chosen) return null;  // another agent was chosen meanwhile
  if (!response.ok) { $("detail").hidden = true; $("nothing").hidden = false; $("nothing").textContent = `agent ${id} is gone`; return null; }
  const detail = await response.json();
  if (full) page.full = detail;
  return detail;
}

async function refreshDetail() {
  const detail = await fetchDetail(page.full === null || page.full.id !== page.chosen);
  if (detail !== null) await renderDetail(detail);
}

async function renderDetail(detail) {
  const full = page.full;
  const first = page.detail === null || page.detail.id !== detail.id;
  page.detail = detail;
  $("nothing").hidden = true; $("detail").hidden = false;
  setText($("title"), `agent ${detail.id} — ${detail.graph} — ${detail.state}${detail.node ? " at " + detail.node : ""}`);
  const graph = $("graph"), machine = $("machine");
  if (graph.dataset.key !== detail.graph) { graph.innerHTML = await graphDrawing(full); graph.dataset.key = detail.graph; graph.dataset.lit = "\u0000"; }
  if (!machine.firstChild) { machine.innerHTML = await machineDrawing(); machine.dataset.lit = "\u0000"; }
  // Lit again only when what is lit changed: each lighting restyles the drawing.
  if (graph.dataset.lit !== detail.node) { light(graph, detail.node); graph.dataset.lit = detail.node; }
  const was = detail.state === "idle" ? STATUS_STATE[detail.last_status] ?? "" : "";
  if (machine.dataset.lit !== `${detail.state} ${was}`) {
    light(machine, detail.state);
    light(machine, was, "was");
    machine.dataset.lit = `${detail.state} ${was}`;
  }
  renderActions(detail, first);
  renderTimeline(detail);
}

function renderActions(detail, first) {
  const paused = detail.state === "paused";
  for (const id of ["resume", "jump", "jump-node"]) setDisabled($(id), !paused);
  setDisabled($("cancel"), !["running", "paused", "resuming"].includes(detail.state));
  const info = detail.pause;
  setText($("pause-info"), info ? `paused at ${info.node}; a plain resume takes exit "${info.pending_exit}" to ${info.pending_target || "END"}${info.timeout_ms ? `, times out after ${info.timeout_ms} ms` : ", waits for you"}` : "not paused");
  // Rebuilt only for another pause, so that results being typed survive a refresh.
  const results = $("tool-results");
  const callsKey = info && info.awaits_results ? `${detail.id}: ${info.pending_calls.map((c) => c.call_id).join(" ")}` : "";
  if (results.dataset.calls !== callsKey) {
    results.dataset.calls = callsKey;
    results.replaceChildren();
    for (const call of callsKey ? info.pending_calls : []) {
      const area = el("textarea", { rows: 1, cols: 40, value: "" });
      area.dataset.callId = call.call_id;
      results.append(el("div", { className: "field" }, el("label", { textContent: `result of ${call.tool}(${call.arguments}) ${call.call_id}` }), area));
    }
  }
  if (first) {
    const nodes = Object.keys(page.full.params);
    $("jump-node").replaceChildren(...nodes.map((n) => el("option", { value: n, textContent: n })));
    $("params-node").replaceChildren(...nodes.map((n) => el("option", { value: n, textContent: n })));
    renderParams();
  }
}

function renderParams() {
  const detail = page.full;
  const node = $("params-node").value;
  const box = $("params-fields");
  box.replaceChildren();
  for (const field of detail.params[node] || []) {
    let input;
    if (field.kind === "enum") {
      input = el("select", {}, ...field.choices.map((c) => el("option", { value: c, textContent: c, selected: c === field.value })));
    } else if (field.kind === "bool") {
      input = el("input", { type: "checkbox", checked: Boolean(field.value) });
    } else if (field.kind === "int" || field.kind === "float") {
      input = el("input", { type: "number", value: field.value, step: field.kind === "int" ? "1" : "any" });
    } else if (field.kind === "json") {
      input = el("textarea", { rows: 2, cols: 40, value: JSON.stringify(field.value) });
    } else {
      input = el("textarea", { rows: 2, cols: 40, value: field.value });
    }
    input.name = field.name; input.dataset.kind = field.kind; input.dataset.initial = JSON.stringify(field.value);
    const range = field.min !== null || field.max !== null ? ` (${field.min ?? ""} … ${field.max ?? ""})` : "";
    box.append(el("div", { className: "field" }, el("label", { textContent: field.name }), input, el("small", { textContent: (field.doc || "") + range })));
  }
}

function fieldValue(input) {
  const kind = input.dataset.kind;
  if (kind === "bool") return input.checked;
  if (kind === "int" || kind === "float") return input.value === "" ? null : Number(input.value);
  if (kind === "json") return JSON.parse(input.value);
  return input.value;
}

function say(reply) {
  const out = $("action-result");
  if (reply.ok) { out.className = "done"; out.textContent = "done"; }
  else { out.className = "refusal"; out.textContent = `refused: ${reply.code ?? ""} ${reply.name ?? ""}: ${reply.message}`; }
}

async function act(action, body) {
  const response = await api(`/api/agents/${page.chosen}/${action}`, body);
  say(await response.json());
  await refreshDetail();
  queueRedraw(true);
}

$("resume").addEventListener("click", () => {
  const results = [...$("tool-results").querySelectorAll("textarea")].map((a) => ({ call_id: a.dataset.callId, result: a.value }));
  act("resume", { resume_node: "", tool_results: results });
});
$("jump").addEventListener("click", () => act("resume", { resume_node: $("jump-node").value, tool_results: [] }));
$("cancel").addEventListener("click", () => act("cancel", {}));
$("params-node").addEventListener("change", renderParams);
$("params").addEventListener("submit", (event) => {
  event.preventDefault();
  const values = {};
  try {
    for (const input of $("params-fields").querySelectorAll("[name]")) {
      const value = fieldValue(input);
      if (JSON.stringify(value) !== input.dataset.initial) values[input.name] = value;
    }
  } catch (error) { say({ ok: false, message: `not JSON: ${error.message}` }); return; }
  act("params", { node: $("params-node").value, values });
});

// --- the timeline -----------------------------------------------------------------------------

function eventText(e) {
  switch (e.kind) {
    case "turn_started": return `user: ${JSON.stringify(e.message)}`;
    case "node_started": return `${e.node} (${e.node_type})`;
    case "node_ended": return `${e.node} → exit ${e.exit_route}`;
    case "generation": return `${e.model}: ${e.prompt_tokens === null ? "prompt not counted" : e.prompt_tokens + " prompt tokens"}, ${e.tokens} tokens, first token ${e.seconds_to_first_token === null ? "–" : (e.seconds_to_first_token * 1000).toFixed(1) + " ms"}, ${(e.seconds * 1000).toFixed(1)} ms${e.error ? " (" + e.error + ")" : ""}`;
    case "tool_call": return `${e.tool}(${e.arguments}) id ${e.call_id} [${e.disposition}]`;
    case "paused": return `at ${e.node}, pending exit ${e.pending_exit}${e.pending_calls.length ? ", calls " + e.pending_calls.join(", ") : ""}`;
    case "resumed": return `after ${e.paused_seconds === null ? "?" : e.paused_seconds.toFixed(2) + " s"}${e.resume_node ? ", jump to " + e.resume_node : ""}${Object.keys(e.results).length ? ", results " + JSON.stringify(e.results) : ""}`;
    case "turn_ended": return `${e.status}${e.error_code ? " " + e.error_code + " " + e.error_message : ""}: ${JSON.stringify(e.text)} (${e.tokens} tokens, ${e.pause_count} pauses, ${e.paused_seconds.toFixed(2)} s paused)`;
    default: return JSON.stringify(e);
  }
}

// An ended turn never changes: its element is kept (by turn id, for the chosen agent) and the
// server leaves it out of later fetches; a refresh builds only the turns new or still open,
// and the list is changed in place (a turn inserted, one dropped), not rebuilt. Only the latest
// turn is open: the others are one line each until opened (their events drawn then), so an
// agent that runs turn after turn costs the page one turn's drawing per redraw, not eight.
const drawnTurns = new Map();

function turnItem(turn) {
  const summary = el("summary", { textContent: `turn ${turn.turn_id} ${turn.status || "(open)"}${turn.before_inspector ? ", begun before the inspector watched" : ""} · ${turn.events.length} events` });
  const details = el("details", {}, summary);
  const item = el("li", { className: "turn" }, details);
  item.dataset.key = `${turn.turn_id}:${turn.status}:${turn.events.length}`;
  item.turn = turn;
  details.addEventListener("toggle", () => { if (details.open) fillTurn(item); });
  summary.addEventListener("click", () => { item.dataset.opened = "yes"; });  // kept as the user left it
  return item;
}

function fillTurn(item) {
  if (item.turn === null) return;
  const events = el("ul");
  for (const e of item.turn.events) events.append(el("li", { className: `e-${e.kind}` }, el("span", { className: `k k-${e.kind}`, textContent: e.kind }), ` t=${e.at === null ? "?" : e.at.toFixed(3)} `, eventText(e)));
  item.firstChild.append(events);
  item.turn = null;
}

function renderTimeline(detail) {
  const sent = new Map(detail.timeline.map((turn) => [turn.turn_id, turn]));
  const list = $("timeline");
  const open = new Map([...list.children].map((item) => [item.dataset.turnId, item]));
  const items = [];
  for (const id of [...detail.turn_ids].reverse()) {
    const turn = sent.get(id);
    let item = drawnTurns.get(id);
    if (turn !== undefined) {
      const kept = open.get(String(id));
      const key = `${turn.turn_id}:${turn.status}:${turn.events.length}`;
      item = kept !== undefined && kept.dataset.key === key ? kept : turnItem(turn);
      item.dataset.turnId = id;
      if (turn.status) drawnTurns.set(id, item);
    }
    if (item !== undefined) items.push(item);
  }
  items.forEach((item, i) => {
    const details = item.firstChild;
    const shown = i === 0 || item.dataset.opened === "yes";
    if (shown) fillTurn(item);
    if (details.open !== shown && (i === 0 || item.dataset.opened !== "yes")) details.open = shown;
  });
  const wanted = new Set(items);
  for (const id of [...drawnTurns.keys()]) if (!wanted.has(drawnTurns.get(id))) drawnTurns.delete(id);
  for (const item of [...list.children]) if (!wanted.has(item)) item.remove();
  items.forEach((item, i) => { if (list.children[i] !== item) list.insertBefore(item, list.children[i] ?? null); });
}

// --- live -------------------------------------------------------------------------------------

// A busy game changes faster than anyone reads, and its busiest moments (a room of NPCs
// answering at once) are when it needs the machine most: the page redraws once the pushes
// have paused for QUIET_MS (the server pushes every 0.1 s, and every 0.25 s while the game
// stays busy, so a pause that long means the burst is over), or MAX_WAIT_MS after the first
// change it has not shown yet, whichever comes first; the list and the chosen agent together
// (the agent fetched first, then both written in one go, so the browser lays the page out
// once), the latest state each time. A change shows within about a third of a second, what the
// page shows during a long busy stretch is at most a second old, and the browser's work lands
// after a burst rather than in it.
const QUIET_MS = 300, MAX_WAIT_MS = 1000;
let listDirty = false, chosenDirty = false;

function debounced(run) {
  let timer = null, first = null, running = false, again = false;
  const go = async () => {
    timer = null; first = null; running = true;
    try { await run(); } finally { running = false; if (again) { again = false; schedule(); } }
  };
  const schedule = () => {
    if (running) { again = true; return; }
    const now = performance.now();
    if (first === null) first = now;
    clearTimeout(timer);
    timer = setTimeout(go, Math.max(0, Math.min(QUIET_MS, first + MAX_WAIT_MS - now)));
  };
  return schedule;
}

const scheduleRedraw = debounced(async () => {
  const list = listDirty, chosen = chosenDirty;
  listDirty = chosenDirty = false;
  const detail = chosen ? await fetchDetail(false) : null;
  if (list) renderList();
  if (detail !== null) await renderDetail(detail);
});

function queueRedraw(list, chosen = false) {
  listDirty ||= list; chosenDirty ||= chosen;
  if (listDirty || chosenDirty) scheduleRedraw();
}

// The list is loaded again each time the socket opens, so that no change falls between the
// two; pushes that arrive while it loads are held, and those older than it are dropped.
let loading = false, held = [];

function apply(items, socket) {
  let chosenChanged = false, listChanged = false;
  for (const item of items) {
    if (item.version !== undefined && item.version <= page.version) continue;
    if (item.type === "changed") {
      for (const agent of item.agents) { page.agents.set(agent.id, agent); if (agent.id === page.chosen) chosenChanged = true; }
      for (const id of item.gone) { page.agents.delete(id); if (id === page.chosen) chosenChanged = true; }
      if (item.chosen) chosenChanged = true;
      if (item.agents.length || item.gone.length) listChanged = true;
    } else if (item.type === "resync") { socket.close(); return; }
    if (item.version !== undefined) page.version = item.version;
  }
  queueRedraw(listChanged, chosenChanged && page.chosen !== null);
}

function connect() {
  const socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/ws`);
  socket.onopen = () => { $("live").className = "badge on"; $("live").textContent = "live"; watch(); loadState(); };
  socket.onclose = () => { $("live").className = "badge off"; $("live").textContent = "reconnecting…"; setTimeout(start, 1000); };
  socket.onmessage = (message) => {
    const items = JSON.parse(message.data);
    if (loading) held.push(items); else apply(items, socket);
  };
  page.socket = socket;
}

async function loadState() {
  loading = true; held = [];
  let state;
  try { state = await (await api("/api/state")).json(); } catch (error) { loading = false; return false; }
  page.machine = state.machine; page.svg = state.svg; page.version = state.version;
  page.agents = new Map(state.agents.map((a) => [a.id, a]));
  loading = false;
  const later = held; held = [];
  renderList();
  for (const items of later) apply(items, page.socket);
  if (page.chosen !== null) queueRedraw(false, true);
  return true;
}

async function start() {
  if (await loadState()) connect();
}

$("filter").addEventListener("input", renderList);
$("only-paused").addEventListener("change", renderList);
// The paused-for column ages by itself between events (redrawn only if an agent is paused).
setInterval(() => {
  let aged = false;
  for (const a of page.agents.values()) if (a.paused_for_s !== null) { a.paused_for_s += 1; aged = true; }
  if (aged) queueRedraw(true);
}, 1000);
start();
