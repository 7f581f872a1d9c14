"""The realistic set: requests written for real public REST APIs (benchmarks/datasets/apis/README.md).

- `sources.json` names each API's OpenAPI documents (repository, path, commit, licence, SHA-256);
  the documents themselves are third-party data and are not committed: they are read from the first
  of `$PLANSTACK_APIS_DOCUMENTS`, `../shared/benchmarks/apis/` (beside NESTFUL) and the git-ignored
  `benchmarks/datasets/apis/documents/`, and checked against their SHA-256 before use;
- each API's tools are its documents imported with the product's own importer
  (`serving.toolsets.import_openapi`), so the set plans over exactly what a tenant who uploaded
  those documents would;
- `requests.jsonl` holds the requests with their gold answer: a plan, `{"no_plan": true}` or
  `{"needs_input": ["tool.argument", ...]}`, each planned over its own 6 fixed candidate tools;
  `split` is `dev` (tune on it) or `scored` (score once per change), template-disjoint.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Literal

from serving.toolsets import import_openapi

DATA = Path(__file__).resolve().parent / "datasets" / "apis"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks" / "apis"
ENV = "PLANSTACK_APIS_DOCUMENTS"
SPLITS = ("dev", "scored")
Expect = Literal["plan", "no_plan", "needs_input"]


class DocumentsMissing(FileNotFoundError):
    """The OpenAPI documents are not on this machine (they are not part of the repository)."""


@dataclass(frozen=True)
class ApiCase:
    id: str
    api: str
    lang: str
    template: str
    split: str
    request: str
    candidates: tuple[str, ...]
    expect: Expect
    plan: dict[str, Any]  # the gold plan; {"nodes": []} when no plan is the answer
    needs_input: tuple[str, ...] = ()  # "tool.argument" the request leaves out (expect == "needs_input")


def manifest(data: Path = DATA) -> dict[str, Any]:
    return dict(json.loads((data / "sources.json").read_text(encoding="utf-8")))


def today(data: Path = DATA) -> date:
    """The date the requests are written against (none of them is relative to it)."""
    return date.fromisoformat(manifest(data)["today"])


def documents_root(data: Path = DATA) -> Path:
    """Where the documents are: $PLANSTACK_APIS_DOCUMENTS, ../shared/benchmarks/apis, or the local copy."""
    names = [doc["file"] for api in manifest(data)["apis"].values() for doc in api["documents"]]
    candidates = [Path(os.environ[ENV])] if os.environ.get(ENV) else [SHARED, data / "documents"]
    for root in candidates:
        if all((root / name).is_file() for name in names):
            return root
    tried = ", ".join(str(c) for c in candidates)
    raise DocumentsMissing(f"the realistic set's OpenAPI documents are not in {tried} (see {DATA / 'README.md'})")


def document_paths(data: Path = DATA) -> dict[str, Path]:
    root = documents_root(data)
    return {doc["file"]: root / doc["file"] for api in manifest(data)["apis"].values() for doc in api["documents"]}


@functools.lru_cache(maxsize=4)
def _tools(data: Path, root: Path) -> dict[str, list[dict[str, Any]]]:
    tools: dict[str, list[dict[str, Any]]] = {}
    for name, api in manifest(data)["apis"].items():
        tools[name] = []
        for doc in api["documents"]:
            raw = (root / doc["file"]).read_bytes()
            digest = hashlib.sha256(raw).hexdigest()
            if digest != doc["sha256"]:
                raise ValueError(f"{doc['file']}: SHA-256 {digest[:16]}… is not the one sources.json records")
            tools[name] += import_openapi(raw).openai_tools()
    return tools


def api_tools(data: Path = DATA) -> dict[str, list[dict[str, Any]]]:
    """Every API's imported tools (OpenAI format), by API name; raises DocumentsMissing."""
    return _tools(data, documents_root(data))


def load_cases(split: str | None = None, data: Path = DATA) -> list[ApiCase]:
    """The requests of one split (`dev`, `scored`) or all of them, in file order."""
    if split is not None and split not in SPLITS:
        raise ValueError(f"no split {split!r} (dev, scored)")
    cases = []
    for line in (data / "requests.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        gold = row["gold"]
        expect: Expect = "no_plan" if gold.get("no_plan") else "needs_input" if "needs_input" in gold else "plan"
        plan = {"nodes": gold["nodes"]} if expect == "plan" else {"nodes": []}
        case = ApiCase(
            row["id"],
            row["api"],
            row["lang"],
            row["template"],
            row["split"],
            row["request"],
            tuple(row["candidates"]),
            expect,
            plan,
            tuple(gold.get("needs_input", ())),
        )
        if split is None or case.split == split:
            cases.append(case)
    return cases


def candidate_tools(case: ApiCase, tools: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The case's own 6 candidates, in the fixed order the file gives."""
    by_name = {t["function"]["name"]: t for t in tools[case.api]}
    return [by_name[name] for name in case.candidates]
