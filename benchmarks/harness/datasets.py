"""Data sets of requests with gold plans: the project's jsonl format, NESTFUL (via benchmarks.nestful) and
the realistic set over real REST APIs (via benchmarks.apis).

A `Dataset` says what it plans over: `tools` (OpenAI format; None = the demo domain's own catalog) or,
when `per_case_tools`, each case's own candidate tools (`Case.tools`); whether its plans can be executed
on the demo tools, the date its requests treat as today, and the SHA-256 of every file it was read from
(recorded in reports). A case's `expect` is what the right answer is: a plan (the gold plan), no plan,
or a request for the missing values (`needs_input`, "tool.argument" each).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from benchmarks import apis, nestful, retell
from contract.plan import Plan

ROOT = Path(__file__).resolve().parents[2]
TRAVEL = ROOT / "benchmarks" / "datasets" / "travel_meeting.jsonl"
DEMONSTRATIONS = ROOT / "configs" / "packs" / "travel" / "demonstrations.jsonl"


@dataclass(frozen=True)
class Case:
    id: str
    request: str
    gold: Plan
    expect: str = "plan"  # "plan" | "no_plan" | "needs_input"
    needs_input: tuple[str, ...] = ()
    tools: list[dict[str, Any]] | None = field(default=None, compare=False)  # the case's own candidates
    split: str | None = None  # the realistic set's half: "dev" | "scored"

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
    per_case_tools: bool = False  # every case plans over its own `Case.tools`
    demonstrations: list[tuple[str, dict[str, Any]]] | None = None  # examples / nearest copy, when not leave-one-out

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "n": len(self.cases),
            "of": self.total,
            "tools": len(self.tools)
            if self.tools is not None
            else "6 candidates per request (its own + distractors)"
            if self.per_case_tools
            else "demo registry",
            "executable": self.executable,
            "today": self.today.isoformat() if self.today else None,
            "sha256": self.hashes,
            "plan_sizes": dict(sorted(Counter(c.size for c in self.cases).items())),
            "answers": dict(sorted(Counter(c.expect for c in self.cases).items())),
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


def load_apis(split: str, limit: int | None = None, data: Path = apis.DATA, *, retold: bool = False) -> Dataset:
    """A half of the realistic set (`dev`, `scored`): each case over its own 6 candidate tools (the API's
    documents imported by serving.toolsets); the scored half's examples and nearest copies come from dev
    (never from its own requests), the dev half's leave-one-out. `retold`: that half's retellings instead
    (benchmarks/retell.py: the same requests with other values, for the online stream).
    Raises apis.DocumentsMissing."""
    tools = apis.api_tools(data)
    cases = apis.load_cases(split, data)
    every = [_api_case(c, tools) for c in (retell.retold(cases) if retold else cases)]
    dev = [(c.request, c.plan) for c in apis.load_cases("dev", data)] if split == "scored" else None
    files = [data / "requests.jsonl", data / "sources.json", *apis.document_paths(data).values()]
    return Dataset(
        name=f"apis-{split}" + ("-retold" if retold else ""),
        cases=every[:limit] if limit else every,
        tools=None,
        executable=False,
        today=apis.today(data),
        hashes={_label(p): sha256_file(p) for p in files},
        total=len(every),
        per_case_tools=True,
        demonstrations=dev,
    )


def _api_case(case: apis.ApiCase, tools: dict[str, list[dict[str, Any]]]) -> Case:
    return Case(
        case.id,
        case.request,
        Plan.model_validate(case.plan),
        expect=case.expect,
        needs_input=case.needs_input,
        tools=apis.candidate_tools(case, tools),
        split=case.split,
    )


def all_cases_of(dataset: Dataset, root: Path = nestful.DEFAULT_ROOT) -> list[Case]:
    """Every case of a NESTFUL split (not just the first --limit): the leave-one-out example pool."""
    if dataset.name.startswith("nestful-"):
        split = dataset.name.removeprefix("nestful-")
        return [Case(c.id, c.request, Plan.model_validate(c.plan)) for c in nestful.load_cases(split, root)]
    if dataset.name.startswith("apis-"):
        return load_apis(dataset.name.removeprefix("apis-")).cases
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
