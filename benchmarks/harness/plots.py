"""PNG plots of the reports (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, report: Mapping[str, Any], path: Path, *, bottom: float) -> Path:
    """Footer with the run's provenance, layout, PNG, and free the figure."""
    fig.text(0.01, 0.01, _footer(report), fontsize=7, alpha=0.7)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _footer(report: Mapping[str, Any]) -> str:
    m = report["meta"]
    machine = m["machine"]
    gpus = ", ".join(machine.get("gpus") or []) or f"{machine.get('cpu_count')} CPU cores, no GPU"
    commit = (m.get("git") or {}).get("commit") or "?"  # None outside a git checkout
    return f"model {m.get('model')} · {gpus} · {commit[:10]} · {m.get('created_at')}"


def latency_cdf(report: Mapping[str, Any], path: Path) -> Path:
    """Empirical CDF of successful request latencies, one line per phase (all repeats pooled)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5))
    pooled: dict[str, list[float]] = {}
    for phase in report["phases"]:
        pooled.setdefault(phase["key"], []).extend(s["latency_s"] for s in phase["samples"] if s["ok"])
    for key, values in pooled.items():
        if values:
            ordered = sorted(values)
            ax.step(
                ordered,
                [(i + 1) / len(ordered) for i in range(len(ordered))],
                where="post",
                label=f"{key} (n={len(ordered)})",
            )
    ax.set_xscale("log")
    ax.set_xlabel("latency (s, log scale)")
    ax.set_ylabel("fraction of requests ≤ x")
    ax.set_title("Latency CDF")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _save(plt, fig, report, path, bottom=0.03)


def latency_vs_concurrency(report: Mapping[str, Any], path: Path) -> Path:
    """p50/p95 latency (and throughput) against closed-loop concurrency, one colour per mode."""
    plt = _pyplot()
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.5))
    series: dict[str, list[tuple[int, dict[str, Any]]]] = {}
    for key, s in report["summary"].items():
        mode, loop, level = key.split("/")
        if loop == "closed":
            series.setdefault(mode, []).append((int(level.removeprefix("c=")), s))
    for mode, points in series.items():
        points.sort(key=lambda p: p[0])
        xs = [c for c, _ in points]
        for metric, style in (("latency_p50_s", "-o"), ("latency_p95_s", "--^")):
            ys = [(s.get(metric) or {}).get("mean") for _, s in points]
            ax.plot(xs, [y if y is not None else float("nan") for y in ys], style, label=f"{mode} {metric[8:11]}")
        ys = [(s.get("throughput_rps") or {}).get("mean") for _, s in points]
        ax2.plot(xs, [y if y is not None else float("nan") for y in ys], "-o", label=mode)
    for axis, label in ((ax, "latency (s)"), (ax2, "throughput (req/s)")):
        axis.set_xlabel("concurrency (closed loop)")
        axis.set_ylabel(label)
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    ax.set_title("Latency vs concurrency")
    ax2.set_title("Throughput vs concurrency")
    return _save(plt, fig, report, path, bottom=0.04)


def accuracy_by_plan_size(report: Mapping[str, Any], path: Path) -> Path:
    """Node F1 and full match by gold plan size, one panel per data set, bars per variant."""
    plt = _pyplot()
    first = report["runs"][0]
    names = list(first)
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.5), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        variants = [v for v in first[name] if isinstance(first[name][v], Mapping) and "by_size" in first[name][v]]
        sizes = sorted({s for v in variants for s in first[name][v]["by_size"]})
        width = 0.8 / max(1, len(variants))
        for i, variant in enumerate(variants):
            cells = first[name][variant]["by_size"]
            xs = [j + i * width for j in range(len(sizes))]
            ax.bar(
                xs, [cells.get(s, {}).get("node_f1", 0) for s in sizes], width, label=f"{variant} node F1", alpha=0.8
            )
            ax.plot(xs, [cells.get(s, {}).get("full_match", 0) for s in sizes], "k_", markersize=14)
        ax.set_xticks([j + width * (len(variants) - 1) / 2 for j in range(len(sizes))])
        ax.set_xticklabels(
            [f"{s} (n={first[name][variants[0]]['by_size'][s]['n']})" for s in sizes] if variants else []
        )
        ax.set_xlabel("gold plan size (nodes)")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{name}: node F1 (bars), full match (black ticks)")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    return _save(plt, fig, report, path, bottom=0.04)


def learning_curve(report: Mapping[str, Any], path: Path) -> Path:
    """Online mode: node F1 (solid) and edge F1 (dashed) per window against the accepted examples at its start."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    online = (report.get("online") or [{}])[0]
    for variants in report["runs"][0].values():
        for variant, entry in variants.items():
            windows = entry.get("online") if isinstance(entry, Mapping) else None
            if not windows:
                continue
            xs = [w["index_size"] for w in windows]
            line = ax.plot(xs, [w.get("node_f1", 0) for w in windows], "-o", label=f"{variant} node F1")[0]
            ax.plot(
                xs, [w.get("edge_f1", 0) for w in windows], "--^", color=line.get_color(), label=f"{variant} edge F1"
            )
    if online.get("after") is not None:
        ax.axvline(online["after"], color="grey", linewidth=0.8, alpha=0.6)
        for target, style in ((0.85, ":"), (0.7, "-.")):
            ax.axhline(target, color="grey", linestyle=style, linewidth=0.8, alpha=0.6)
    ax.set_xlabel(
        f"accepted examples in the tenant's memory at the start of each window of {online.get('window', '?')}"
    )
    ax.set_ylabel("F1 (own path)")
    ax.set_ylim(0, 1.05)
    ax.set_title("Learning from feedback: one tenant's memory grows with each corrected plan")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=3)
    return _save(plt, fig, report, path, bottom=0.04)
