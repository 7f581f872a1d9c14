"""The realistic set's documents import with the product's importer and every gold answer fits the tools.

Skipped when the OpenAPI documents are not on this machine (they are third-party data kept out of the
repository: benchmarks/datasets/apis/README.md says where they go).
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import date
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from benchmarks import apis
from contract.plan import Plan, parse_reference
from planner.catalog import ToolCatalog

try:
    TOOLS = apis.api_tools()
except apis.DocumentsMissing as missing:
    pytest.skip(str(missing), allow_module_level=True)

pytestmark = pytest.mark.slow  # imports twelve real documents (about a minute on two shared cores)
CASES = apis.load_cases()
MANIFEST = apis.manifest()
_WORD = re.compile(r"\w+")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# RFC 3339; the offset may be left out only where the API pairs the value with a time-zone field
_DATE_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2})T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?$")
_DECLARES_TIMESTAMP = re.compile(r"RFC ?3339|ISO 8601", re.IGNORECASE)
FORMATS = FormatChecker(formats=())


@FORMATS.checks("date")
def _is_date(value: object) -> bool:
    return not isinstance(value, str) or (bool(_DATE.match(value)) and bool(date.fromisoformat(value)))


@FORMATS.checks("date-time")
def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    match = _DATE_TIME.match(value)
    return bool(match) and bool(date.fromisoformat(match.group(1)))


def by_name(api: str) -> dict[str, dict[str, Any]]:
    return {t["function"]["name"]: t["function"] for t in TOOLS[api]}


def test_at_least_eight_documents_with_recorded_licences_import_and_fit_the_planner_catalog() -> None:
    documents = [doc for api in MANIFEST["apis"].values() for doc in api["documents"]]
    assert len(documents) >= 8 and all(doc["licence"] and len(doc["commit"]) == 40 for doc in documents)
    for api, tools in TOOLS.items():
        names = [t["function"]["name"] for t in tools]
        assert len(names) == len(set(names)) >= 6, api
    for case in CASES:
        ToolCatalog.from_openai(apis.candidate_tools(case, TOOLS))  # raises on a tool the planner refuses


def test_the_set_has_the_promised_shape() -> None:
    assert len(CASES) >= 100 and len({c.id for c in CASES}) == len(CASES)
    assert sum(c.lang == "zh" for c in CASES) >= 15 and {c.lang for c in CASES} == {"en", "zh"}
    kinds = Counter(c.expect for c in CASES)
    assert kinds["no_plan"] >= 3 and kinds["needs_input"] >= 3
    sizes = Counter(len(c.plan["nodes"]) for c in CASES)
    assert sizes[3] + sizes[4] >= 5 and sizes[2] >= 20
    assert all(c.api in MANIFEST["apis"] for c in CASES)


def test_dev_and_scored_are_template_disjoint_and_some_apis_are_scored_only() -> None:
    side: dict[str, set[str]] = {"dev": set(), "scored": set()}
    for case in CASES:
        side[case.split].add(case.template)
    assert side["dev"] and side["scored"] and not side["dev"] & side["scored"]
    scored_only = {name for name, api in MANIFEST["apis"].items() if api["scored_only"]}
    assert scored_only and all(c.split == "scored" for c in CASES if c.api in scored_only)
    assert {c.api for c in CASES if c.split == "dev"} == set(MANIFEST["apis"]) - scored_only

    def multiset(case: apis.ApiCase) -> tuple[str, ...]:
        return tuple(sorted(n["tool"] for n in case.plan["nodes"]))

    dev_sets = {multiset(c) for c in CASES if c.split == "dev" and c.plan["nodes"]}
    assert not [c.id for c in CASES if c.split == "scored" and c.plan["nodes"] and multiset(c) in dev_sets]
    dev_words = [set(_WORD.findall(c.request.lower())) for c in CASES if c.split == "dev"]
    for case in (c for c in CASES if c.split == "scored"):
        words = set(_WORD.findall(case.request.lower()))
        assert all(len(words & w) / len(words | w) < 0.7 for w in dev_words), f"{case.id} nearly repeats a dev request"


def test_every_request_has_six_fixed_candidates_holding_its_gold_tools() -> None:
    for case in CASES:
        names = by_name(case.api)
        assert len(set(case.candidates)) == 6 and set(case.candidates) <= set(names), case.id
        wanted = {n["tool"] for n in case.plan["nodes"]} | {item.split(".")[0] for item in case.needs_input}
        assert wanted <= set(case.candidates), case.id


def test_needs_input_names_required_arguments_of_candidate_tools() -> None:
    for case in (c for c in CASES if c.expect == "needs_input"):
        assert case.needs_input, case.id
        for item in case.needs_input:
            tool, _, argument = item.partition(".")
            parameters = by_name(case.api)[tool]["parameters"]
            assert argument in parameters.get("required", []), f"{case.id}: {item} is not a required argument"


def test_every_gold_plan_uses_declared_arguments_valid_values_and_declared_output_fields() -> None:
    problems: list[str] = []
    for case in (c for c in CASES if c.expect == "plan"):
        plan = Plan.model_validate(case.plan)
        assert plan.ids() == [f"n{i}" for i in range(1, len(plan.nodes) + 1)], case.id
        tools = by_name(case.api)
        tool_of = {node.id: node.tool for node in plan.nodes}
        for index, node in enumerate(plan.nodes):
            where = f"{case.id}/{node.id} {node.tool}"
            params = tools[node.tool]["parameters"]
            props = params["properties"]
            problems += [f"{where}: unknown argument {a}" for a in node.args if a not in props]
            problems += [f"{where}: required {a} missing" for a in params.get("required", []) if a not in node.args]
            for arg, value in node.args.items():
                if arg not in props:
                    continue
                ref = parse_reference(value)
                if ref is not None:
                    earlier = [n.id for n in plan.nodes[:index]]
                    if ref[0] not in earlier:
                        problems.append(f"{where}: {arg} refers to {ref[0]}, not an earlier node")
                    elif not _declares(tools[tool_of[ref[0]]].get("output_schema"), ref[1]):
                        problems.append(f"{where}: {arg} refers to {value}, not a declared output field")
                    continue
                problems += [f"{where}: {arg} = {value!r}: {p}" for p in _value_problems(props[arg], value)]
    assert problems == []


def _value_problems(schema: dict[str, Any], value: Any) -> list[str]:
    validator = Draft202012Validator(schema, format_checker=FORMATS)
    found = [error.message for error in validator.iter_errors(value)]
    description = str(schema.get("description", ""))
    declared = schema.get("format") is None and _DECLARES_TIMESTAMP.search(description)
    date_only = "YYYY-MM-DD" in description and "HH" not in description  # "ISO 8601 date string (YYYY-MM-DD)"
    either = re.search(r"\bdate or (a )?date-?time\b", description, re.IGNORECASE)  # "an ISO 8601 date or datetime"
    if declared and isinstance(value, str) and not (_is_date_time(value) or (date_only or either) and _is_date(value)):
        found.append("not the RFC 3339 timestamp the description declares")
    return found


def _declares(schema: Any, path: tuple[str, ...]) -> bool:
    """Whether `path` (object fields, and digits for array items) exists in an output schema."""
    if not isinstance(schema, dict):
        return False
    for segment in path:
        options = schema.get("anyOf")
        if isinstance(options, list):
            schema = next((o for o in options if o != {"type": "null"}), {})
        if segment.isdigit():
            if schema.get("type") != "array" or not isinstance(schema.get("items"), dict):
                return False
            schema = schema["items"]
        else:
            properties = schema.get("properties") or {}
            if segment not in properties:
                return False
            schema = properties[segment]
    return True


def test_the_checks_above_catch_wrong_gold() -> None:
    events = by_name("google-calendar")["calendar_events_list"]
    assert _value_problems(events["parameters"]["properties"]["timeMin"], "March 3, 2027")
    assert not _value_problems(events["parameters"]["properties"]["timeMin"], "2027-03-03T00:00:00Z")
    assert _value_problems(events["parameters"]["properties"]["orderBy"], "start time")
    assert _declares(events["output_schema"], ("items", "0", "id"))
    assert not _declares(events["output_schema"], ("items", "id")) and not _declares(
        events["output_schema"], ("eventId",)
    )
