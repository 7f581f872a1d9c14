// The run list (filtered by status, paged) and the form that starts a run.

import { api } from "./api.js";
import { h, seconds, show, when } from "./dom.js";

const FILTERS = ["", "running", "awaiting_approval", "requires_action", "escalated", "succeeded", "failed", "interrupted"];

export function showRuns(status) {
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
  const took = ["running", "awaiting_approval", "requires_action"].includes(run.status) ? null : run.updated_at - run.created_at;
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
