"""Markdown for the planner benchmark reports (benchmarks/planner_bench.py)."""

from __future__ import annotations

from typing import Any

KEYS = (
    "schema_valid",
    "node_f1",
    "edge_f1",
    "arg_name_f1",
    "arg_value_acc",
    "full_match",
    "filler_rate",
    "answer_correct",
    "no_plan_correct",
    "needs_input_correct",
)


def _row(label: str, summary: dict[str, Any], key: str) -> str:
    acc = summary.get(key) or {}
    cells = [
        label,
        str(summary.get("n")),
        str(summary.get("model_valid_rate", "")),
        str(summary.get("valid_rate_incl_fallback", "")),
        " ".join(f"{k}:{v}" for k, v in sorted((summary.get("paths") or {}).items())),
        f"{summary.get('nodes_mean')}/{summary.get('gold_nodes_mean')}",
        str(summary.get("latency_p50_s", "")),
        str(summary.get("latency_p95_s", "")),
        str(summary.get("calls_mean", "")),
        str(summary.get("ttft_mean_s", "")),
        str(summary.get("decode_mean_s", "")),
        *(str(acc.get(k, "")) for k in KEYS),
    ]
    return "| " + " | ".join(cells) + " |"


def markdown(report: dict[str, Any]) -> str:
    lines = ["# Planner benchmark", ""]
    lines += [
        "Plan columns (node_f1 … full_match) are over the requests whose gold is a plan; answer_correct: share "
        "answered with the gold's kind (plan / no plan / needs input); no_plan_correct, needs_input_correct: the "
        "same over those golds; filler_rate: optional arguments written that the aligned gold node lacks / all "
        "optional arguments written (benchmarks/metrics.py).",
        "",
    ]
    if report.get("kind") == "run":
        lines += [
            f"Engine {report.get('engine_url')} (`{report.get('model')}`, backend {report.get('backend')}), "
            "temperature 0, the same scored requests for every variant, 6 candidate tools per request (its own + "
            "seeded distractors). Accuracy columns are the MODEL PATH only (a request the model did not plan scores "
            "0; fallback plans never count), except the rows marked 'incl. fallback'. Latency is per plan: p50/p95 "
            "wall time, mean engine calls, mean summed time to first token (grammar compile + prefill + queue) and "
            "mean summed decode time.",
            "",
        ]
    header = (
        "| variant | n | model valid | valid incl. fallback | paths | nodes pred/gold | p50 s | p95 s | calls | "
        "TTFT s | decode s | " + " | ".join(KEYS) + " |"
    )
    rule = "|" + "---|" * (11 + len(KEYS))
    for name, entry in report.get("sets", {}).items():
        lines += [f"## {name} (scored n = {entry.get('n')})", ""]
        if "split" in entry and "seed" in entry["split"]:
            split = entry["split"]
            lines += [
                f"Split (seed {split['seed']}): pool {split['pool']} requests in {split['groups_pool']} groups, scored "
                f"{split['scored']} in {split['groups_scored']} groups; {split['rule']}.",
                "",
            ]
        elif "split" in entry:
            split = entry["split"]
            lines += [f"Split: examples from {split['pool']} dev requests, {split['scored']} scored; {split['rule']}."]
            lines.append("")
        lines += [header, rule]
        for variant in entry.get("variants", []):
            lines.append(_row(variant["variant"], variant, "model_path"))
            if variant.get("paths", {}).get("fallback"):
                lines.append(_row("↳ incl. fallback", variant, "final_incl_fallback"))
        for baseline in entry.get("baselines", []):
            lines.append(_row(baseline["variant"], baseline, "final_incl_fallback"))
        lines.append("")
        for reach in entry.get("reachability", []):
            lines.append(
                f"- grammar reachability ({reach['grounding']}): {reach['schema_valid_literal_reachable']} of the "
                f"{reach['schema_valid_literal_values']} gold literal values that satisfy the tool's schema "
                f"({reach['literal_reachable']} of all {reach['literal_values']}, some gold values violate their "
                f"tool's schema or name arguments it lacks), {reach['references_reachable']} of "
                f"{reach['references']} gold references"
            )
        if "shortlist_recall" in entry:
            r = entry["shortlist_recall"]
            cells = ", ".join(f"{k} {v}" for k, v in r.items() if k.startswith("recall"))
            lines.append(f"- embedding shortlist over all {r['tools']} tools, {r['requests']} requests: {cells}")
        lines.append("")
    return "\n".join(lines) + "\n"
