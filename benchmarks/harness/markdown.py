"""Markdown summaries of latency and accuracy reports (numbers as mean ± stdev over repeats)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmarks.harness.stats import format_pm

VARIANT_LABELS = {
    "planner": "planner (grammar + examples, model path)",
    "unconstrained": "baseline: unconstrained decoding (no grammar, 1 attempt)",
    "nn_copy": "baseline: nearest-neighbour plan copy (no model)",
    "memory": "planner reading the tenant's memory (online: grows with feedback)",
    "zeroshot": "planner, zero-shot (no demonstrations)",
}
LATENCY_COLUMNS = (
    "error_rate",
    "latency_p50_s",
    "latency_p95_s",
    "latency_p99_s",
    "ttft_p50_s",
    "ttft_p95_s",
    "throughput_rps",
)
ACC_COLUMNS = (
    "schema_valid",
    "node_f1",
    "edge_f1",
    "arg_name_f1",
    "arg_value_acc",
    "full_match",
    "exec_success",
    "exec_expected",
    "filler_rate",
    "answer_correct",
    "no_plan_correct",
    "needs_input_correct",
)


def header(report: Mapping[str, Any], title: str) -> list[str]:
    m = report["meta"]
    machine = m["machine"]
    gpus = ", ".join(machine.get("gpus") or []) or "no GPU"
    git = m.get("git") or {}
    commit = (git.get("commit") or "?")[:12] + (" (+ uncommitted changes)" if git.get("dirty") else "")
    lines = [
        f"# {title}" + (f" — {m['label']}" if m.get("label") else ""),
        "",
        f"- **Model**: `{m.get('model')}`",
        f"- **Machine**: {machine.get('cpu_model')} · {machine.get('cpu_count')} cores · "
        f"{machine.get('memory_gb')} GB RAM · {gpus} · {machine.get('platform')}",
        f"- **Commit**: {commit} · created {m.get('created_at')} · seeds {m.get('seeds')}",
    ]
    for note in report.get("notes") or []:
        lines.append(f"- **Note**: {note}")
    return [*lines, ""]


def latency_markdown(report: Mapping[str, Any], plots: list[str]) -> str:
    cfg = report["config"]
    lines = header(report, "Latency benchmark")
    lines += [
        f"Target `{cfg['url']}`; {cfg['warmup']} warm-up request(s) per mode excluded; {cfg['repeat']} repeat(s) "
        "(cells are mean ± stdev over repeats). Latency = send → last byte of a successful request "
        "(open loop: from the *scheduled* send time); TTFT = first content token (chat streaming only); "
        "throughput = successful requests / phase wall time; out tok/s = output tokens of the phase / wall time.",
        "",
        "| phase | n | error rate | p50 s | p95 s | p99 s | TTFT p50 s | TTFT p95 s | req/s | out tok/s "
        "| paths / run status (first repeat) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    first = {p["key"]: p for p in reversed(report["phases"])}
    for key, s in report["summary"].items():
        by_path = first[key]["summary"].get("latency_by_path_s") or {}
        paths = (
            ", ".join(
                f"{k}: {v} (p50 {by_path[k]['p50']:.2f} s)" if k in by_path else f"{k}: {v}"
                for k, v in first[key]["summary"]["paths"].items()
            )
            or "–"
        )
        errors = first[key]["summary"]["errors_by_status"]
        if errors:
            paths += " · errors " + ", ".join(f"{k}: {v}" for k, v in errors.items())
        lines.append(
            f"| {key} | {int(s['n']['mean'])} | "
            + " | ".join(format_pm(s.get(k)) for k in LATENCY_COLUMNS)
            + f" | {format_pm(s.get('output_tokens_per_s'), 1)} | {paths} |"
        )
    lines += [
        "",
        "`paths`: what produced each plan (`model`, `model_retry`, `fallback`, `cache` = a plan-cache hit of the "
        "gateway; e2e: planner path / run status). A `cache` hit is not a model latency: start a fresh gateway, "
        "use another tenant key or `--offset` to send requests it has not seen.",
    ]
    if report.get("requests_wrapped"):
        lines += [
            "",
            "Requests wrapped around the data set: later requests repeat earlier ones (plan-cache hits possible).",
        ]
    lines += ["", *(f"![{p}]({p})" for p in plots)]
    return "\n".join(lines) + "\n"


def accuracy_markdown(report: Mapping[str, Any], plots: list[str]) -> str:
    cfg = report["config"]
    lines = header(report, "Plan accuracy benchmark")
    source = (
        f"in-process planner over `{cfg['engine_url']}`" if cfg.get("engine_url") else f"gateway `{cfg['gateway_url']}`"
    )
    lines += [
        f"Planner: {source}; {cfg['repeat']} repeat(s) (mean ± stdev); requests one at a time; plan cache off. "
        + (
            "**Online mode**: one stream of requests, each planned over its own catalog; after every request its "
            "gold plan is sent as feedback on the memory variant's plan id into a tenant memory that starts empty "
            "(`nn_copy` copies the nearest demonstration of that memory whose tools fit the catalog). "
            if cfg.get("online")
            else ""
        )
        + "Metric columns count ONLY the variant's own path (model / model_retry, or the copy) over ALL n requests: "
        "a request answered by the fallback planner or not at all scores 0 there. Fallback plans are scored on "
        "their own row. exec_success: share of plans with ≥ 90% of nodes succeeding on the demo tools; "
        "exec_expected: ≥ 90% of the gold nodes' outputs reproduced exactly. Where a set's gold can be 'no plan' "
        "or 'needs input', the plan columns are over the requests whose gold is a plan; answer_correct is the "
        "share answered with the gold's kind (plan / no plan / needs input), no_plan_correct and "
        "needs_input_correct the same over those golds; filler_rate = optional arguments written that the "
        "aligned gold node lacks / all optional arguments written (benchmarks/metrics.py).",
        "",
    ]
    for name, variants in report["summary"].items():
        d = report["datasets"][name]
        cols = [c for c in ACC_COLUMNS if any(c in v for v in variants.values())]
        lines += [
            f"## {name} — n = {d['n']} of {d['of']}, tools: {d['tools']}, plan sizes {d['plan_sizes']}",
            "",
            "sha256: " + ", ".join(f"`{k}` {v[:16]}…" for k, v in d["sha256"].items()),
            "",
            "| variant | own path | fallback | no plan | " + " | ".join(cols) + " | p50 s | p95 s |",
            "|---" * (6 + len(cols)) + "|",
        ]
        for variant, s in variants.items():
            lines.append(
                f"| {VARIANT_LABELS.get(variant, variant)} | {format_pm(s.get('primary_share'), 2)} | "
                f"{format_pm(s.get('fallback_share'), 2)} | {format_pm(s.get('failed_share'), 2)} | "
                + " | ".join(format_pm(s.get(c)) for c in cols)
                + f" | {format_pm(s.get('latency_p50_s'), 2)} | {format_pm(s.get('latency_p95_s'), 2)} |"
            )
            for prefix, label in (
                ("fallback_only", "↳ fallback plans only"),
                ("final", "↳ final plans incl. fallback"),
            ):
                if any(k.startswith(prefix + ".") for k in s):
                    lines.append(
                        f"| {label} | | | | " + " | ".join(format_pm(s.get(f"{prefix}.{c}")) for c in cols) + " | | |"
                    )
        first = report["runs"][0][name]
        lines += ["", "Paths (first repeat): " + "; ".join(f"{v}: {first[v]['paths']}" for v in variants), ""]
        lines += _by_size(first, variants)
        if cfg.get("online"):
            lines += _online(first, variants, (report.get("online") or [{}])[0])
    if report.get("skipped"):
        lines += ["Skipped: " + "; ".join(f"{k} ({v})" for k, v in report["skipped"].items()), ""]
    lines += [*(f"![{p}]({p})" for p in plots)]
    return "\n".join(lines) + "\n"


def _by_size(first: Mapping[str, Any], variants: Mapping[str, Any]) -> list[str]:
    sizes = sorted({size for v in variants for size in first[v]["by_size"]})
    keys = [
        k
        for k in ("node_f1", "edge_f1", "full_match", "exec_success")
        if any(k in first[v]["by_size"][s] for v in variants for s in first[v]["by_size"])
    ]
    lines = [
        "By gold plan size (first repeat; own path over all requests of that size):",
        "",
        "| variant | size | n | " + " | ".join(keys) + " |",
        "|---" * (3 + len(keys)) + "|",
    ]
    for v in variants:
        for size in sizes:
            cell = first[v]["by_size"].get(size)
            if cell:
                lines.append(
                    f"| {v} | {size} | {cell['n']} | " + " | ".join(f"{cell.get(k, 0):.3f}" for k in keys) + " |"
                )
    return [*lines, ""]


def _online(first: Mapping[str, Any], variants: Mapping[str, Any], online: Mapping[str, Any]) -> list[str]:
    lines = []
    if online.get("after_target"):
        after = online["after"]
        lines += [
            f"Accepted examples at the end: {online['accepted']} of {online['requests']} requests "
            f"(stream seed {online['seed']}; {len(online['rejected'])} gold plans refused by validation, "
            f"{online['imported_without_plan_id']} imported because planning failed). Requests planned with at "
            f"least {after} accepted examples in the memory (first repeat):",
            "",
            "| variant | requests | n | node_f1 | edge_f1 | arg_value_acc | full_match |",
            "|---|---|---|---|---|---|---|",
        ]
        for v, cells in online["after_target"].items():
            for part, label in (("all", "all"), ("scored_half", "scored halves only")):
                c = cells[part]
                lines.append(
                    f"| {v} | {label} | {c['n']} | "
                    + " | ".join(f"{c.get(k, 0):.3f}" for k in ("node_f1", "edge_f1", "arg_value_acc", "full_match"))
                    + " |"
                )
        lines.append("")
    lines += ["Online: accuracy per window against the accepted examples at its start (first repeat):", ""]
    for v in variants:
        windows = first[v].get("online") or []
        if not windows:
            continue
        keys = list(dict.fromkeys(k for w in windows for k in w if k not in ("requests", "index_size", "n")))
        lines += [f"*{v}*", "", "| requests | accepted | " + " | ".join(keys) + " |", "|---" * (2 + len(keys)) + "|"]
        lines += [
            f"| {w['requests']} | {w['index_size']} | " + " | ".join(_cell(w.get(k)) for k in keys) + " |"
            for w in windows
        ]
        lines.append("")
    return lines


def _cell(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"
