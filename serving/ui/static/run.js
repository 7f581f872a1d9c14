// One run, live: its DAG and panels, kept current from the run's event stream.

import { api, follow } from "./api.js";
import { drawDag } from "./dag.js";
import { fill, h, onLeave, show, when } from "./dom.js";
import { gantt } from "./gantt.js";
import { actionPanel, approvalPanel, deliveriesPanel, detailsPanel, escalationPanel, legend, plannerPanel } from "./panels.js";
import { roundStatusOf } from "./status.js";

export async function showRun(runId) {
  const model = { decisionError: null, view: null, plans: null, events: [], running: new Set(), retrying: new Set(), picked: null, round: null, last: 0 };
  const controller = new AbortController();
  let stopped = false;
  const page = h("div", { class: "run-page", id: "run-page", "data-run-id": runId });
  show(page);
  onLeave(() => { stopped = true; controller.abort(); });

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
    if (["replan", "awaiting_approval", "approval_decided", "run_finished", "escalated", "escalation_reopened", "tool_call_required", "tool_output_received"].includes(type)) {
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
      const live = model.view && ["running", "awaiting_approval", "requires_action"].includes(model.view.status);
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
      approvalPanel(view, refresh, model),
      actionPanel(view, refresh),
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
