// A plan as a DAG: layered by depth (longest path from a root), drawn as SVG.

import { svg } from "./dom.js";

const REF_RE = /^\$(n[1-9][0-9]?)(?:\.|$)/;

export function upstreamOf(node) {
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

export function layout(plan) {
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

export function drawDag(plan, statusOf, onPick, picked) {
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
