// A run's timeline: one bar per node attempt, from its start to its end (or now, while it runs).

import { h, seconds, svg } from "./dom.js";

export function gantt(model) {
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
