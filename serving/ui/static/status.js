// The status a node shows in a run's DAG: its result, a held approval, a live attempt, or standby.

export function nodeStatus(model, id) {
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
  const asked = model.view.status === "requires_action" && model.view.action ? model.view.action.calls : [];
  if (asked.some((c) => c.node_id === id)) return "requires_action";
  if (model.running.has(round + "/" + id)) return model.retrying.has(round + "/" + id) ? "retried" : "running";
  const standby = model.view.plan.nodes.some((n) => n.fallback === id);
  return standby ? "standby" : "pending";
}

export function roundStatusOf(model, round) {
  return (id) => {
    if (round === model.view.round) return nodeStatus(model, id);
    const result = model.view.nodes.find((r) => r.round === round && r.node_id === id);
    if (!result) return "pending";
    return result.status === "succeeded" ? "succeeded" : "replanned";
  };
}
