// planstack web UI: runs, their DAG live from the event stream, approvals, escalations, plans.
// Plain JavaScript modules written for planstack (no framework, nothing loaded from elsewhere):
// api.js (the API and the key), dom.js (elements and the view on screen), login.js, runs.js,
// escalations.js, run.js (one run, live: dag.js, status.js, gantt.js, panels.js) and plan.js.
// This module routes: #/runs, #/runs/<id>, #/escalations, #/plan (ids are not secrets; keys never
// go in URLs).

import { forgetKey, key, onUnauthorized } from "./api.js";
import { showEscalations } from "./escalations.js";
import { showLogin } from "./login.js";
import { showPlanPage } from "./plan.js";
import { showRun } from "./run.js";
import { showRuns } from "./runs.js";

function route() {
  const logout = document.getElementById("logout");
  logout.hidden = !key();
  if (!key()) return showLogin(route);
  const hash = location.hash || "#/runs";
  const parts = hash.slice(2).split("/");
  if (parts[0] === "runs" && parts[1]) return showRun(decodeURIComponent(parts[1]));
  if (parts[0] === "escalations") return showEscalations();
  if (parts[0] === "plan") return showPlanPage();
  return showRuns(new URLSearchParams(hash.split("?")[1] || "").get("status") || "");
}

onUnauthorized(route);
document.getElementById("logout").addEventListener("click", () => {
  forgetKey();
  route();
});
window.addEventListener("hashchange", route);
route();
