// planstack web UI: runs, their DAG live from the event stream, approvals, escalations, plans.
// Plain JavaScript written for planstack (no framework, nothing loaded from elsewhere). The API key
// lives in this tab's sessionStorage only and goes out as a bearer token on every call; the DOM is
// built with textContent only (nothing a run or a model wrote is ever parsed as HTML).
"use strict";

const KEY_SLOT = "planstack.api_key";
const SVG_NS = "http://www.w3.org/2000/svg";
const REF_RE = /^\$(n[1-9][0-9]?)(?:\.|$)/;
const main = document.getElementById("main");
let current = null; // the view on screen: {stop()} to end its streams and timers

// ---------------------------------------------------------------------------------------------
// DOM helpers

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function setAttrs(el, attrs) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
}

function json(value, limit) {
  const text = JSON.stringify(value, null, 2);
  if (text === undefined) return "null";
  return limit && text.length > limit ? text.slice(0, limit) + "\n… (" + (text.length - limit) + " more characters)" : text;
}

function when(ts) {
  return ts ? new Date(ts * 1000).toLocaleString() : "—";
}

function seconds(s) {
  if (s === null || s === undefined || Number.isNaN(s)) return "—";
  return s < 1 ? Math.round(s * 1000) + " ms" : s.toFixed(s < 10 ? 2 : 1) + " s";
}

function fill(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

function show(...nodes) {
  if (current) current.stop();
  current = null;
  fill(main, ...nodes);
}

// ---------------------------------------------------------------------------------------------
// API: every call carries the key as a bearer token

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || "HTTP " + status);
    this.status = status;
    this.code = body && body.error ? body.error.code : null;
  }
}

function key() {
  return sessionStorage.getItem(KEY_SLOT);
}

async function api(method, path, body) {
  const headers = { Authorization: "Bearer " + key() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (_) {
    data = null;
  }
  if (response.status === 401) {
    sessionStorage.removeItem(KEY_SLOT);
    route();
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// Server-sent events over fetch (EventSource cannot send an Authorization header).
async function follow(runId, after, onEvent, signal) {
  const headers = { Authorization: "Bearer " + key(), Accept: "text/event-stream" };
  if (after) headers["Last-Event-ID"] = String(after);
  const response = await fetch("/v1/runs/" + encodeURIComponent(runId) + "/events", { headers, signal });
  if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let type = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) type = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (data.length) onEvent(type, JSON.parse(data.join("\n")));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Routing: #/runs, #/runs/<id>, #/escalations, #/plan (ids are not secrets; keys never go in URLs)

function route() {
  const logout = document.getElementById("logout");
  logout.hidden = !key();
  if (!key()) return showLogin();
  const hash = location.hash || "#/runs";
  const parts = hash.slice(2).split("/");
  if (parts[0] === "runs" && parts[1]) return showRun(decodeURIComponent(parts[1]));
  if (parts[0] === "escalations") return showEscalations();
  if (parts[0] === "plan") return showPlanPage();
  return showRuns(new URLSearchParams(hash.split("?")[1] || "").get("status") || "");
}

function showLogin(message) {
  const input = h("input", { type: "password", id: "api-key", autocomplete: "off", placeholder: "API key", required: true });
  const problem = h("p", { class: "error", id: "login-error" }, message || "");
  const form = h(
    "form",
    { class: "card login", id: "login-form" },
    h("h1", {}, "planstack"),
    h("p", { class: "muted" }, "The key is kept in this tab only (sessionStorage) and sent as a bearer token."),
    h("label", { for: "api-key" }, "API key"),
    input,
    h("button", { type: "submit", id: "login" }, "Open"),
    problem,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY_SLOT, input.value.trim());
    try {
      await api("GET", "/v1/runs?limit=1");
      route();
    } catch (error) {
      sessionStorage.removeItem(KEY_SLOT);
      showLogin(error.status === 401 ? "That key was not accepted." : error.message);
    }
  });
  show(form);
  input.focus();
}

// ---------------------------------------------------------------------------------------------
// Run list

const FILTERS = ["", "running", "awaiting_approval", "escalated", "succeeded", "failed", "interrupted"];

function showRuns(status) {
  const table = h("tbody", { id: "runs-body" });
  const more = h("button", { type: "button", id: "next-page", hidden: true }, "Older runs");
  const problem = h("p", { class: "error" });
  let cursor = null;
  const select = h(
    "select",
    { id: "status-filter", onchange: () => (location.hash = "#/runs" + (select.value ? "?status=" + select.value : "")) },
    FILTERS.map((value) => h("option", { value, selected: value === status }, value ? value.replace("_", " ") : "all")),
  );
  async function load() {
    const query = new URLSearchParams({ limit: "20" });
    if (status) query.set("status", status);
    if (cursor) query.set("after", cursor);
    try {
      const page = await api("GET", "/v1/runs?" + query);
      for (const run of page.data) table.append(runRow(run));
      cursor = page.next_after;
      more.hidden = !cursor;
      if (!table.children.length) table.append(h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No runs.")));
    } catch (error) {
      problem.textContent = error.message;
    }
  }
  more.addEventListener("click", load);
  show(
    h(
      "section",
      { class: "card" },
      h("div", { class: "row" }, h("h1", {}, "Runs"), h("span", { class: "spacer" }), h("label", { for: "status-filter" }, "Status "), select),
      h("table", { class: "runs", id: "runs-table" }, h("thead", {}, h("tr", {}, ["Run", "Status", "Request", "Started", "Duration"].map((t) => h("th", {}, t)))), table),
      more,
      problem,
    ),
    newRunForm(),
  );
  load();
}

function runRow(run) {
  const status = run.escalation === "open" ? "escalated" : run.status;
  const took = run.status === "running" || run.status === "awaiting_approval" ? null : run.updated_at - run.created_at;
  return h(
    "tr",
    { "data-run-id": run.run_id, "data-status": run.status },
    h("td", {}, h("a", { href: "#/runs/" + run.run_id, class: "mono" }, run.run_id)),
    h("td", {}, h("span", { class: "badge status-" + status }, status.replace("_", " "))),
    h("td", { class: "request" }, run.request),
    h("td", {}, when(run.created_at)),
    h("td", {}, seconds(took)),
  );
}

function newRunForm() {
  const request = h("textarea", { id: "new-request", rows: 2, placeholder: "What should be done?" });
  const plan = h("textarea", { id: "new-plan", rows: 6, class: "mono", placeholder: '{"nodes": [...]}  (optional: run this plan instead of planning)' });
  const problem = h("p", { class: "error", id: "new-run-error" });
  const form = h(
    "form",
    { class: "card", id: "new-run" },
    h("h2", {}, "Start a run"),
    request,
    plan,
    h("button", { type: "submit", id: "start-run" }, "Start"),
    problem,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const body = { request: request.value.trim() };
      if (plan.value.trim()) body.plan = JSON.parse(plan.value);
      const run = await api("POST", "/v1/runs", body);
      location.hash = "#/runs/" + run.run_id;
    } catch (error) {
      problem.textContent = error.message;
    }
  });
  return form;
}

// ---------------------------------------------------------------------------------------------
// Escalation queue

async function showEscalations() {
  const list = h("tbody", { id: "escalations-body" });
  const problem = h("p", { class: "error" });
  show(
    h(
      "section",
      { class: "card" },
      h("h1", {}, "Escalations"),
      h("p", { class: "muted" }, "Runs that ended for good and wait for a person: resume, re-plan or close them from the run page."),
      h("table", { class: "runs", id: "escalations-table" }, h("thead", {}, h("tr", {}, ["Run", "Reason", "Error", "Request", "Escalated"].map((t) => h("th", {}, t)))), list),
      problem,
    ),
  );
  try {
    const page = await api("GET", "/v1/escalations?limit=50");
    for (const item of page.data) {
      list.append(
        h(
          "tr",
          { "data-run-id": item.run_id },
          h("td", {}, h("a", { href: "#/runs/" + item.run_id, class: "mono" }, item.run_id)),
          h("td", {}, h("span", { class: "badge status-escalated" }, item.escalation.reason)),
          h("td", {}, (item.error && item.error.error) || ""),
          h("td", { class: "request" }, item.request),
          h("td", {}, when(item.escalation.opened_at)),
        ),
      );
    }
    if (!page.data.length) list.append(h("tr", {}, h("td", { colspan: 5, class: "muted" }, "Nothing escalated.")));
  } catch (error) {
    problem.textContent = error.message;
  }
}

// ---------------------------------------------------------------------------------------------
// The DAG: layered by depth (longest path from a root), drawn as SVG

function upstreamOf(node) {
  const ups = new Set(node.depends_on || []);
  (function walk(value) {
    if (typeof value === "string") {
      const match = REF_RE.exec(value);
      if (match) ups.add(match[1]);
    } else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === "object") Object.values(value).forEach(walk);
  })(node.args || {});
  return [...ups];
}

function layout(plan) {
  const byId = new Map(plan.nodes.map((n) => [n.id, n]));
  const depth = new Map();
  const visiting = new Set();
  function depthOf(id) {
    if (depth.has(id)) return depth.get(id);
    if (visiting.has(id) || !byId.has(id)) return 0;
    visiting.add(id);
    let d = 0;
    for (const up of upstreamOf(byId.get(id))) d = Math.max(d, depthOf(up) + 1);
    for (const n of plan.nodes) if (n.fallback === id) d = Math.max(d, depthOf(n.id) + 1);
    visiting.delete(id);
    depth.set(id, d);
    return d;
  }
  const layers = [];
  for (const node of plan.nodes) {
    const d = depthOf(node.id);
    (layers[d] = layers[d] || []).push(node.id);
  }
  const W = 170, H = 64, GAPX = 60, GAPY = 22;
  const pos = new Map();
  layers.forEach((ids, d) => ids.forEach((id, i) => pos.set(id, { x: 20 + d * (W + GAPX), y: 20 + i * (H + GAPY), d })));
  const width = 40 + layers.length * (W + GAPX) - GAPX;
  const height = 40 + Math.max(1, ...layers.map((l) => l.length)) * (H + GAPY) - GAPY;
  return { pos, W, H, width, height, layers };
}

function drawDag(plan, statusOf, onPick, picked) {
  const { pos, W, H, width, height } = layout(plan);
  const root = svg("svg", { id: "dag", class: "dag", width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "plan DAG" });
  root.append(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" }, svg("path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" }))));
  for (const node of plan.nodes) {
    const to = pos.get(node.id);
    const edges = upstreamOf(node).map((up) => [up, "edge"]);
    for (const n of plan.nodes) if (n.fallback === node.id) edges.push([n.id, "edge fallback-edge"]);
    for (const [up, cls] of edges) {
      const from = pos.get(up);
      if (!from) continue;
      const x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x, y2 = to.y + H / 2, mid = (x1 + x2) / 2;
      root.append(svg("path", { class: cls, d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`, "marker-end": "url(#arrow)", "data-edge": up + "-" + node.id }));
    }
  }
  for (const node of plan.nodes) {
    const p = pos.get(node.id);
    const status = statusOf(node.id);
    const group = svg(
      "g",
      { class: "node status-" + status + (picked === node.id ? " picked" : ""), "data-node": node.id, "data-status": status, transform: `translate(${p.x},${p.y})`, tabindex: 0 },
      svg("rect", { width: W, height: H, rx: 8 }),
      svg("text", { x: 10, y: 22, class: "node-id" }, node.id),
      svg("text", { x: 40, y: 22, class: "node-tool" }, node.tool.length > 17 ? node.tool.slice(0, 16) + "…" : node.tool),
      svg("text", { x: 10, y: 46, class: "node-status" }, status.replace("_", " ")),
    );
    group.addEventListener("click", () => onPick(node.id));
    group.addEventListener("keydown", (e) => e.key === "Enter" && onPick(node.id));
    root.append(group);
  }
  return root;
}

// ---------------------------------------------------------------------------------------------
// One run, live

function nodeStatus(model, id) {
  const round = model.view.round;
  const result = model.view.nodes.find((r) => r.round === round && r.node_id === id);
  const held = model.view.status === "awaiting_approval" && model.view.approval && model.view.approval.pending;
  if (result) {
    if (result.status === "succeeded") {
      if (result.fallback_for) return "fallback";
      if (result.attempts > 1) return "retried";
      return "succeeded";
    }
    return result.status;
  }
  if (held && held.kind === "tool" && held.calls.some((c) => c.node_id === id)) return "awaiting_approval";
  if (held && held.kind === "plan") return "awaiting_approval";
  if (model.running.has(round + "/" + id)) return model.retrying.has(round + "/" + id) ? "retried" : "running";
  const standby = model.view.plan.nodes.some((n) => n.fallback === id);
  return standby ? "standby" : "pending";
}

function roundStatusOf(model, round) {
  return (id) => {
    if (round === model.view.round) return nodeStatus(model, id);
    const result = model.view.nodes.find((r) => r.round === round && r.node_id === id);
    if (!result) return "pending";
    return result.status === "succeeded" ? "succeeded" : "replanned";
  };
}

async function showRun(runId) {
  const model = { view: null, plans: null, events: [], running: new Set(), retrying: new Set(), picked: null, round: null, last: 0 };
  const controller = new AbortController();
  let stopped = false;
  const page = h("div", { class: "run-page", id: "run-page", "data-run-id": runId });
  show(page);
  current = { stop: () => { stopped = true; controller.abort(); } };

  async function refresh() {
    model.view = await api("GET", "/v1/runs/" + encodeURIComponent(runId));
    if (model.round === null || model.round > model.view.round) model.round = model.view.round;
    if (model.view.round > 0 || model.plans) {
      model.plans = (await api("GET", "/v1/runs/" + encodeURIComponent(runId) + "/plans")).data;
    }
    render();
  }

  function onEvent(type, event) {
    if (type === "error" || type === "done") return;
    model.last = Math.max(model.last, event.seq || 0);
    model.events.push(event);
    const key = event.round + "/" + event.node_id;
    if (type === "node_started") model.running.add(key);
    if (type === "node_retrying") model.retrying.add(key);
    if (type === "node_finished" || type === "node_failed" || type === "node_skipped") {
      model.running.delete(key);
      model.view.nodes = model.view.nodes.filter((r) => !(r.round === event.round && r.node_id === event.node_id));
      model.view.nodes.push({ node_id: event.node_id, round: event.round, tool: event.data.tool, status: event.data.status, attempts: event.data.attempts, duration_ms: event.data.duration_ms, summary: event.data.summary, error: event.data.error, fallback_for: event.data.fallback_for, reused_from: event.data.reused_from, started_at: null, finished_at: event.ts, partial: true });
    }
    if (["replan", "awaiting_approval", "approval_decided", "run_finished", "escalated", "escalation_reopened"].includes(type)) {
      refresh().catch(() => {});
    } else render();
  }

  async function stream() {
    let quiet = 0;
    while (!stopped && quiet < 30) {
      const before = model.last;
      try {
        await follow(runId, model.last, onEvent, controller.signal);
      } catch (error) {
        if (stopped) return;
      }
      if (stopped) return;
      await refresh().catch(() => {});
      const live = model.view && ["running", "awaiting_approval"].includes(model.view.status);
      if (!live) return;
      quiet = model.last === before ? quiet + 1 : 0;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  function render() {
    const view = model.view;
    if (!view) return;
    const round = model.round;
    const plan = round === view.round || !model.plans ? view.plan : (model.plans.find((p) => p.round === round) || {}).plan || view.plan;
    const shownStatus = view.escalation && view.escalation.state === "open" ? "escalated" : view.status;
    const rounds = model.plans && model.plans.length > 1
      ? h("div", { class: "rounds", id: "rounds" }, "Round ", model.plans.map((p) => h("button", { type: "button", id: "round-" + p.round, class: p.round === round ? "active" : "", onclick: () => { model.round = p.round; render(); } }, String(p.round))))
      : null;
    fill(page,
      h(
        "section",
        { class: "card" },
        h("div", { class: "row" }, h("h1", { class: "mono" }, view.run_id), h("span", { class: "badge big status-" + shownStatus, id: "run-status", "data-status": view.status }, shownStatus.replace("_", " "))),
        h("p", { class: "request", id: "run-request" }, view.request),
        h("p", { class: "muted" }, `round ${view.round} · ${view.replans} re-plans · started ${when(view.created_at)} · updated ${when(view.updated_at)}`),
        view.error ? h("p", { class: "error", id: "run-error" }, `${view.error.type}: ${view.error.error}`) : null,
      ),
      approvalPanel(view, refresh),
      escalationPanel(view, refresh),
      h(
        "section",
        { class: "card" },
        h("div", { class: "row" }, h("h2", {}, "Plan"), h("span", { class: "spacer" }), rounds),
        h("div", { class: "dag-wrap" }, drawDag(plan, roundStatusOf(model, round), (id) => { model.picked = id; render(); }, model.picked)),
        legend(),
      ),
      detailsPanel(model, plan, round),
      h("section", { class: "card" }, h("h2", {}, "Timeline"), gantt(model)),
      plannerPanel(view.planner),
      deliveriesPanel(view),
      h("section", { class: "card" }, h("h2", {}, "Events"), h("ol", { class: "events mono", id: "events" }, model.events.slice(-200).map((e) => h("li", { "data-type": e.type }, `#${e.seq} r${e.round} ${e.type}${e.node_id ? " " + e.node_id : ""}`)))),
    );
  }

  try {
    await refresh();
  } catch (error) {
    fill(page, h("section", { class: "card" }, h("h1", {}, "Run"), h("p", { class: "error", id: "not-found" }, error.status === 404 ? "Run not found." : error.message)));
    return;
  }
  stream();
}

function legend() {
  const kinds = ["pending", "running", "succeeded", "failed", "retried", "skipped", "fallback", "replanned", "awaiting_approval", "standby"];
  return h("p", { class: "legend" }, kinds.map((k) => h("span", { class: "badge status-" + k }, k.replace("_", " "))));
}

function detailsPanel(model, plan, round) {
  const id = model.picked;
  const node = id ? plan.nodes.find((n) => n.id === id) : null;
  if (!node) return h("section", { class: "card", id: "details" }, h("h2", {}, "Node"), h("p", { class: "muted" }, "Click a node to see its arguments, output, observation and errors."));
  const result = model.view.nodes.find((r) => r.round === round && r.node_id === id) || null;
  const retries = model.events.filter((e) => e.type === "node_retrying" && e.node_id === id && e.round === round);
  const meta = result
    ? {
        status: result.status,
        attempts: result.attempts,
        tool_version: result.tool_version,
        duration_ms: result.duration_ms,
        started_at: when(result.started_at),
        finished_at: when(result.finished_at),
        input_hash: result.input_hash,
        output_sha256: result.output_sha256,
        success_condition: result.success_condition,
        condition_passed: result.condition_passed,
        reused_from: result.reused_from,
        fallback_for: result.fallback_for,
      }
    : { status: roundStatusOf(model, round)(id) };
  return h(
    "section",
    { class: "card", id: "details", "data-node": id },
    h("h2", {}, `Node ${id} · ${node.tool}`),
    h("div", { class: "grid" },
      h("div", {}, h("h3", {}, "Arguments (as planned)"), h("pre", { id: "details-plan-args" }, json(node.args))),
      h("div", {}, h("h3", {}, "Resolved arguments"), h("pre", { id: "details-args" }, result && result.args ? json(result.args) : "—")),
      h("div", {}, h("h3", {}, "Output (truncated)"), h("pre", { id: "details-output" }, result && result.output !== undefined && result.output !== null ? json(result.output, 2000) : result ? result.summary || "—" : "—")),
      h("div", {}, h("h3", {}, "Observation"), h("pre", { id: "details-meta" }, json(meta))),
    ),
    result && result.error ? h("p", { class: "error", id: "details-error" }, `${result.error.type}: ${result.error.error}`) : null,
    retries.length ? h("div", {}, h("h3", {}, "Attempts"), h("ul", { id: "details-attempts" }, retries.map((e) => h("li", {}, `attempt ${e.data.attempt} failed (${(e.data.error || {}).type}): ${(e.data.error || {}).error}; retried after ${e.data.delay_s} s`)))) : null,
  );
}

function gantt(model) {
  const starts = new Map();
  for (const e of model.events) if (e.type === "node_started") starts.set(e.round + "/" + e.node_id, e.ts);
  const rows = [];
  for (const r of model.view.nodes) {
    const started = r.started_at || starts.get(r.round + "/" + r.node_id);
    if (!started || r.attempts === 0) continue;
    rows.push({ key: r.round + "/" + r.node_id, label: `r${r.round} ${r.node_id} ${r.tool}`, start: started, end: r.finished_at || started, status: r.status === "succeeded" && r.attempts > 1 ? "retried" : r.status });
  }
  const now = Date.now() / 1000;
  for (const key of model.running) {
    if (rows.some((row) => row.key === key) || !starts.has(key)) continue;
    rows.push({ key, label: "r" + key.replace("/", " "), start: starts.get(key), end: now, status: "running" });
  }
  if (!rows.length) return h("p", { class: "muted", id: "gantt" }, "No node has run yet.");
  rows.sort((a, b) => a.start - b.start || a.key.localeCompare(b.key));
  const t0 = Math.min(...rows.map((r) => r.start));
  const span = Math.max(0.001, Math.max(...rows.map((r) => r.end)) - t0);
  const LABEL = 190, WIDTH = 560, ROW = 24;
  const root = svg("svg", { id: "gantt", class: "gantt", width: LABEL + WIDTH + 70, height: rows.length * ROW + 24 });
  rows.forEach((row, i) => {
    const x = LABEL + ((row.start - t0) / span) * WIDTH;
    const w = Math.max(2, ((row.end - row.start) / span) * WIDTH);
    root.append(
      svg("text", { x: 4, y: i * ROW + 16, class: "gantt-label" }, row.label),
      svg("rect", { x, y: i * ROW + 4, width: w, height: ROW - 8, rx: 3, class: "bar status-" + row.status, "data-node": row.key, "data-start": row.start, "data-end": row.end }),
      svg("text", { x: x + w + 4, y: i * ROW + 16, class: "gantt-time" }, seconds(row.end - row.start)),
    );
  });
  root.append(svg("text", { x: LABEL, y: rows.length * ROW + 18, class: "gantt-time" }, "0"), svg("text", { x: LABEL + WIDTH - 30, y: rows.length * ROW + 18, class: "gantt-time" }, seconds(span)));
  return root;
}

function approvalPanel(view, refresh) {
  const pending = view.status === "awaiting_approval" && view.approval && view.approval.pending;
  if (!pending) return null;
  const name = h("input", { id: "decider-name", placeholder: "Your name", maxlength: 64 });
  const reason = h("input", { id: "decision-reason", placeholder: "Reason (shown to the re-planner when re-planning)", maxlength: 1000 });
  const replan = h("input", { type: "checkbox", id: "decision-replan" });
  const problem = h("p", { class: "error", id: "decision-error" });
  async function decide(verdict) {
    try {
      await api("POST", `/v1/runs/${encodeURIComponent(view.run_id)}/${verdict}`, { name: name.value, reason: reason.value || null, replan: verdict === "reject" && replan.checked });
      await refresh();
    } catch (error) {
      problem.textContent = error.message;
    }
  }
  const what = pending.kind === "plan"
    ? h("p", {}, "The whole plan below waits for approval before anything runs.")
    : h("ul", { id: "held-calls" }, pending.calls.map((c) => h("li", { "data-node": c.node_id }, h("b", {}, `${c.node_id} ${c.tool}`), h("pre", {}, json(c.args)))));
  return h(
    "section",
    { class: "card approval", id: "approval" },
    h("h2", {}, "Waiting for approval"),
    what,
    h("p", { class: "muted" }, "expires " + when(pending.expires_at)),
    h("div", { class: "row" }, name, reason),
    h("div", { class: "row" },
      h("button", { type: "button", id: "approve", class: "ok", onclick: () => decide("approve") }, "Approve"),
      h("button", { type: "button", id: "reject", class: "danger", onclick: () => decide("reject") }, "Reject"),
      h("label", {}, replan, " re-plan with the reason instead of stopping"),
    ),
    problem,
  );
}

function escalationPanel(view, refresh) {
  const escalation = view.escalation;
  if (!escalation) return null;
  if (escalation.state !== "open") {
    const by = escalation.handled_by ? `${escalation.handled_by.name} (${escalation.handled_by.tenant})` : "";
    return h("section", { class: "card", id: "escalation" }, h("p", {}, `Escalation ${escalation.state} by ${by} at ${when(escalation.handled_at)}${escalation.note ? ": " + escalation.note : ""}`));
  }
  const name = h("input", { id: "handler-name", placeholder: "Your name", maxlength: 64 });
  const note = h("input", { id: "escalation-note", placeholder: "Note (when closing)", maxlength: 2000 });
  const edited = h("textarea", { id: "edited-plan", rows: 8, class: "mono" }, JSON.stringify(view.plan, null, 2));
  const problem = h("p", { class: "error", id: "escalation-error" });
  async function act(action) {
    try {
      const body = { name: name.value };
      if (action === "replan") body.plan = JSON.parse(edited.value);
      if (action === "close") body.note = note.value || null;
      await api("POST", `/v1/escalations/${encodeURIComponent(view.run_id)}/${action}`, body);
      location.reload();
    } catch (error) {
      problem.textContent = error.message;
    }
  }
  return h(
    "section",
    { class: "card escalation", id: "escalation" },
    h("h2", {}, "Escalated: " + escalation.reason),
    h("p", {}, escalation.error),
    h("div", { class: "row" }, name, note),
    h("div", { class: "row" },
      h("button", { type: "button", id: "resume", onclick: () => act("resume") }, "Resume"),
      h("button", { type: "button", id: "replan", onclick: () => act("replan") }, "Re-plan with the edited plan"),
      h("button", { type: "button", id: "close", onclick: () => act("close") }, "Close"),
    ),
    h("details", {}, h("summary", {}, "Edit the plan"), edited),
    problem,
  );
}

function plannerPanel(planner) {
  if (!planner) return null;
  const attempts = planner.attempts || [];
  return h(
    "section",
    { class: "card", id: "planner" },
    h("h2", {}, "Planner"),
    h("p", { id: "planner-path" }, `path: ${planner.path}` + (planner.model ? ` · model ${planner.model}` : "") + (planner.fallback_reason ? ` · fallback because ${planner.fallback_reason}` : "")),
    attempts.length
      ? h("table", { class: "runs", id: "planner-attempts" }, h("thead", {}, h("tr", {}, ["#", "error", "layer", "tokens out", "latency"].map((t) => h("th", {}, t)))), h("tbody", {}, attempts.map((a) => h("tr", {}, h("td", {}, a.number), h("td", {}, a.error || "—"), h("td", {}, a.error_layer || "—"), h("td", {}, a.completion_tokens), h("td", {}, seconds(a.latency_s))))))
      : h("p", { class: "muted" }, planner.path === "given" ? "The client gave the plan." : "No model attempt."),
  );
}

function deliveriesPanel(view) {
  if (!view.webhook_url) return null;
  return h(
    "section",
    { class: "card", id: "deliveries" },
    h("h2", {}, "Webhook"),
    h("p", { class: "mono" }, view.webhook_url),
    h("ul", {}, (view.deliveries || []).map((d) => h("li", { "data-state": d.state }, `#${d.seq} ${d.event}: ${d.state} after ${d.attempts} attempt(s)${d.status_code ? " · HTTP " + d.status_code : ""}${d.error ? " · " + d.error : ""}`))),
  );
}

// ---------------------------------------------------------------------------------------------
// Plan page: a /v1/plans result drawn without execution

function showPlanPage() {
  const request = h("textarea", { id: "plan-request", rows: 2, placeholder: "What should be planned?" });
  const out = h("div", { id: "plan-result" });
  const problem = h("p", { class: "error", id: "plan-error" });
  const form = h("form", { class: "card", id: "plan-form" }, h("h1", {}, "Plan a request"), request, h("button", { type: "submit", id: "make-plan" }, "Plan"), problem);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problem.textContent = "";
    out.replaceChildren(h("p", { class: "muted" }, "Planning…"));
    try {
      const result = await api("POST", "/v1/plans", { request: request.value.trim() });
      let picked = null;
      const draw = () => {
        const node = picked ? result.plan.nodes.find((n) => n.id === picked) : null;
        fill(out,
          h("section", { class: "card" },
            h("p", { id: "plan-path" }, `path: ${result.path}` + (result.fallback_reason ? ` · fallback because ${result.fallback_reason}` : "") + ` · ${result.plan.nodes.length} nodes`),
            h("div", { class: "dag-wrap" }, drawDag(result.plan, () => "planned", (id) => { picked = id; draw(); }, picked)),
            node ? h("pre", { id: "plan-node" }, json(node)) : null,
          ),
          plannerPanel({ path: result.path, fallback_reason: result.fallback_reason, attempts: result.attempts }),
        );
      };
      draw();
    } catch (error) {
      out.replaceChildren();
      problem.textContent = error.message;
    }
  });
  show(form, out);
}

// ---------------------------------------------------------------------------------------------

document.getElementById("logout").addEventListener("click", () => {
  sessionStorage.removeItem(KEY_SLOT);
  route();
});
window.addEventListener("hashchange", route);
route();
