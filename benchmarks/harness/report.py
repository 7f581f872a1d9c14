"""Report metadata (commit, machine, seeds, data set hashes), writing a report folder, comparing reports.

A report is one JSON document `{"kind": "latency"|"accuracy", "meta", "config", ..., "summary"}` where
`summary` maps a phase or data set/variant to flat metrics `{metric: {"mean", "stdev", "n"}}`; that
is what `compare` diffs. Next to it: a Markdown summary and PNG plots with the same stem.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def git_commit(root: Path = ROOT) -> dict[str, Any]:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True)  # noqa: S603,S607
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(status) if status is not None else None}


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "cpu_model": None,
        "memory_gb": None,
        "gpus": [],
    }
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory_gb"] = round(int(line.split()[1]) / 1024**2, 1)
                break
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(  # noqa: S603,S607
                ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            )
            info["gpus"] = [line.strip() for line in out.stdout.splitlines() if line.strip()]
        except (OSError, subprocess.SubprocessError):
            pass
    return info


def meta(*, model: str | None, seeds: Mapping[str, int], label: str | None = None) -> dict[str, Any]:
    return {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "label": label,
        "model": model,
        "git": git_commit(),
        "machine": machine_info(),
        "seeds": dict(seeds),
        "argv": redact_argv(sys.argv),
    }


def redact_argv(argv: list[str]) -> list[str]:
    """The command line with secret option values masked (`--api-key X` and `--api-key=X`)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append("********")
            hide_next = False
        elif arg.startswith("--api-key="):
            out.append("--api-key=********")
        else:
            out.append(arg)
            hide_next = arg == "--api-key"
    return out


def write_report(out_dir: Path, stem: str, report: dict[str, Any], markdown: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / f"{stem}.json", out_dir / f"{stem}.md"
    json_path.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    md_path.write_text(markdown, encoding="utf-8")
    return [json_path, md_path]


def load_report(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "summary" not in data:
        raise ValueError(f"{path} is not a bench report (no 'summary')")
    return data


def flatten(summary: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """`{"a": {"b": {"mean": 1}}}` → `{"a.b": 1}`: the mean of every summarised metric."""
    out: dict[str, float] = {}
    for key, value in summary.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and "mean" in value and not isinstance(value["mean"], Mapping):
            if isinstance(value["mean"], (int, float)):
                out[name] = float(value["mean"])
        elif isinstance(value, Mapping):
            out.update(flatten(value, name + " · "))
    return out


def compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per metric present in either report: A, B, B − A and the relative change."""
    fa, fb = flatten(a["summary"]), flatten(b["summary"])
    rows = []
    for key in dict.fromkeys([*fa, *fb]):
        va, vb = fa.get(key), fb.get(key)
        delta = None if va is None or vb is None else vb - va
        rel = None if delta is None or not va else delta / abs(va)
        rows.append({"metric": key, "a": va, "b": vb, "delta": delta, "relative": rel})
    return rows


def compare_markdown(a_path: Path, b_path: Path, a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    def fmt(x: float | None, pct: bool = False) -> str:
        if x is None:
            return "–"
        return f"{x:+.1%}" if pct else f"{x:.4g}"

    def head(r: Mapping[str, Any]) -> str:
        m = r.get("meta", {})
        commit = (m.get("git") or {}).get("commit") or "?"
        host = (m.get("machine") or {}).get("hostname")
        return f"{r.get('kind')} · model {m.get('model')} · {commit[:10]} · {host} · {m.get('created_at')}"

    lines = [
        f"# Compare: A = `{a_path}`, B = `{b_path}`",
        "",
        f"- A: {head(a)}",
        f"- B: {head(b)}",
        "",
        "| metric | A | B | B − A | change |",
        "|---|---|---|---|---|",
    ]
    for row in compare(a, b):
        cells = [fmt(row["a"]), fmt(row["b"]), fmt(row["delta"]), fmt(row["relative"], True)]
        lines.append(f"| {row['metric']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
