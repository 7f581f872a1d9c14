"""Data sets of requests with gold plans: the project's jsonl format and NESTFUL (via benchmarks.nestful).

A `Dataset` says what it plans over: `tools` (OpenAI format; None = the demo domain's own catalog),
whether its plans can be executed on the demo tools, the date its requests treat as today, and the
SHA-256 of every file it was read from (recorded in reports).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from benchmarks import nestful
from contract.plan import Plan

ROOT = Path(__file__).resolve().parents[2]
TRAVEL = ROOT / "benchmarks" / "datasets" / "travel_meeting.jsonl"
DEMONSTRATIONS = ROOT / "configs" / "packs" / "travel" / "demonstrations.jsonl"


@dataclass(frozen=True)
class Case:
    id: str
    request: str
    gold: Plan

    @property
    def size(self) -> int:
        return len(self.gold.nodes)


@dataclass
class Dataset:
    name: str
    cases: list[Case]
    tools: list[dict[str, Any]] | None = None  # None: the demo domain (the executors' registry)
    executable: bool = False  # gold and predicted plans can run on the demo tools
    today: date | None = None
    hashes: dict[str, str] = field(default_factory=dict)
    demos_path: Path | None = None  # "training" requests for examples / nearest copy; None = leave-one-out
    total: int = 0  # cases in the file before --limit

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "n": len(self.cases),
            "of": self.total,
            "tools": len(self.tools) if self.tools is not None else "demo registry",
            "executable": self.executable,
            "today": self.today.isoformat() if self.today else None,
            "sha256": self.hashes,
            "plan_sizes": dict(sorted(Counter(c.size for c in self.cases).items())),
        }


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_jsonl(path: Path, limit: int | None = None, *, name: str | None = None) -> Dataset:
    """`{"id", "request", "plan": {"nodes": [...]}, "today"?}` per line; executable on the demo tools."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    cases = [
        Case(str(r.get("id", f"row-{i:03d}")), r["request"], Plan.model_validate(r["plan"])) for i, r in enumerate(rows)
    ]
    todays = Counter(r["today"] for r in rows if r.get("today"))
    today = date.fromisoformat(todays.most_common(1)[0][0]) if todays else None
    hashes = {_label(path): sha256_file(path)}
    demos = DEMONSTRATIONS if path.resolve() == TRAVEL.resolve() and DEMONSTRATIONS.exists() else None
    if demos is not None:
        hashes[_label(demos)] = sha256_file(demos)
    return Dataset(
        name=name or path.stem,
        cases=cases[:limit] if limit else cases,
        tools=None,
        executable=True,
        today=today,
        hashes=hashes,
        demos_path=demos,
        total=len(cases),
    )


def load_nestful(split: str, limit: int | None = None, root: Path = nestful.DEFAULT_ROOT) -> Dataset:
    """A NESTFUL split (sgd, glaive): spec → OpenAI tools, `$varN.x$` → `$nK.x` references (edges)."""
    cases = [Case(c.id, c.request, Plan.model_validate(c.plan)) for c in nestful.load_cases(split, root)]
    files = [root / f"non-executable-{split}-data.json", root / f"non-executable-{split}-spec.json"]
    return Dataset(
        name=f"nestful-{split}",
        cases=cases[:limit] if limit else cases,
        tools=nestful.load_tools(split, root),
        executable=False,
        today=None,
        hashes={_label(p): sha256_file(p) for p in files},
        demos_path=None,
        total=len(cases),
    )


def all_cases_of(dataset: Dataset, root: Path = nestful.DEFAULT_ROOT) -> list[Case]:
    """Every case of a NESTFUL split (not just the first --limit): the leave-one-out example pool."""
    if dataset.name.startswith("nestful-"):
        split = dataset.name.removeprefix("nestful-")
        return [Case(c.id, c.request, Plan.model_validate(c.plan)) for c in nestful.load_cases(split, root)]
    return list(dataset.cases)


def load_demonstrations(path: Path) -> list[tuple[str, dict[str, Any]]]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(r["request"], r["plan"]) for r in rows]


def _label(path: Path) -> str:
    """The path relative to the project root (`../shared/...` outside it), as reports show it."""
    resolved = path.resolve()
    if resolved.is_relative_to(ROOT):
        return str(resolved.relative_to(ROOT))
    if resolved.is_relative_to(ROOT.parent):
        return "../" + str(resolved.relative_to(ROOT.parent))
    return str(path)
