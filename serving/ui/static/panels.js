// The panels of a run page: the picked node, approval, escalation, planner, webhook deliveries.

import { api } from "./api.js";
import { h, json, seconds, when } from "./dom.js";
import { roundStatusOf } from "./status.js";

export function legend() {
  const kinds = ["pending", "running", "succeeded", "failed", "retried", "skipped", "fallback", "replanned", "awaiting_approval", "requires_action", "standby"];
  return h("p", { class: "legend" }, kinds.map((k) => h("span", { class: "badge status-" + k }, k.replace("_", " "))));
}

export function detailsPanel(model, plan, round) {
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

// `notes` outlives a re-render (the page redraws while the run waits): a refused decision stays shown.
export function approvalPanel(view, refresh, notes) {
  const pending = view.status === "awaiting_approval" && view.approval && view.approval.pending;
  if (!pending) return null;
  const name = h("input", { id: "decider-name", placeholder: "Your name", maxlength: 64 });
  const reason = h("input", { id: "decision-reason", placeholder: "Reason (shown to the re-planner when re-planning)", maxlength: 1000 });
  const replan = h("input", { type: "checkbox", id: "decision-replan" });
  const problem = h("p", { class: "error", id: "decision-error" }, notes.decisionError || "");
  async function decide(verdict) {
    try {
      await api("POST", `/v1/runs/${encodeURIComponent(view.run_id)}/${verdict}`, { name: name.value, reason: reason.value || null, replan: verdict === "reject" && replan.checked });
      notes.decisionError = null;
      await refresh();
    } catch (error) {
      notes.decisionError = error.message;  // e.g. 403 approver_key_required, 429 too_many_active_runs
      problem.textContent = error.message;
      await refresh().catch(() => {});  // this panel may have been redrawn meanwhile: draw it again, with the message
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

// Calls the run handed to its caller: ask_user questions get an answer box, the app's own tools a JSON
// output box; both answer through POST /v1/runs/{id}/tool_outputs.
export function actionPanel(view, refresh) {
  const calls = view.status === "requires_action" && view.action ? view.action.calls : [];
  if (!calls.length) return null;
  const problem = h("p", { class: "error", id: "answer-error" });
  async function send(nodeId, body) {
    try {
      await api("POST", `/v1/runs/${encodeURIComponent(view.run_id)}/tool_outputs`, { node_id: nodeId, ...body });
      await refresh();
    } catch (error) {
      problem.textContent = error.message;
    }
  }
  function call(c) {
    if (c.kind === "ask_user") {
      const box = h("textarea", { id: "answer-" + c.node_id, class: "answer", rows: 2, maxlength: 4000, placeholder: "Your answer" });
      return h("li", { "data-node": c.node_id, class: "question" },
        h("p", { class: "question-text", id: "question-" + c.node_id }, c.args.question),
        box,
        h("div", { class: "row" },
          h("button", { type: "button", id: "send-" + c.node_id, class: "ok", onclick: () => send(c.node_id, { output: { answer: box.value } }) }, "Answer"),
          h("span", { class: "muted" }, "expires " + when(c.expires_at))),
      );
    }
    const box = h("textarea", { id: "output-" + c.node_id, class: "mono", rows: 4, placeholder: '{"...": "..."}' });
    const reason = h("input", { id: "error-" + c.node_id, placeholder: "…or why the call failed", maxlength: 2000 });
    return h("li", { "data-node": c.node_id },
      h("b", {}, `${c.node_id} ${c.tool}`), h("pre", {}, json(c.args)), box,
      h("div", { class: "row" },
        h("button", { type: "button", id: "send-" + c.node_id, onclick: () => {
          let output;
          try { output = JSON.parse(box.value); } catch (_) { problem.textContent = "the output is not JSON"; return; }
          send(c.node_id, { output });
        } }, "Send output"),
        reason,
        h("button", { type: "button", class: "danger", onclick: () => send(c.node_id, { error: reason.value || "failed" }) }, "Report failure"),
        h("span", { class: "muted" }, "expires " + when(c.expires_at))),
    );
  }
  return h(
    "section",
    { class: "card action", id: "action" },
    h("h2", {}, calls.some((c) => c.kind === "ask_user") ? "Waiting for your answer" : "Waiting for the app's tool outputs"),
    h("ul", { id: "pending-calls", class: "calls" }, calls.map(call)),
    problem,
  );
}

export function escalationPanel(view, refresh) {
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

export function plannerPanel(planner) {
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

export function deliveriesPanel(view) {
  if (!view.webhook_url) return null;
  return h(
    "section",
    { class: "card", id: "deliveries" },
    h("h2", {}, "Webhook"),
    h("p", { class: "mono" }, view.webhook_url),
    h("ul", {}, (view.deliveries || []).map((d) => h("li", { "data-state": d.state }, `#${d.seq} ${d.event}: ${d.state} after ${d.attempts} attempt(s)${d.status_code ? " · HTTP " + d.status_code : ""}${d.error ? " · " + d.error : ""}`))),
  );
}
