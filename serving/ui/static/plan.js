// The plan page: a /v1/plans result drawn without execution.

import { api } from "./api.js";
import { drawDag } from "./dag.js";
import { fill, h, json, show } from "./dom.js";
import { plannerPanel } from "./panels.js";

export function showPlanPage() {
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
