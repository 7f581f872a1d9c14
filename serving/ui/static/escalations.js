// The escalation queue: runs that ended for good and wait for a person.

import { api } from "./api.js";
import { h, show, when } from "./dom.js";

export async function showEscalations() {
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
