"""Property-based fuzzing of the plan validator (hypothesis): whatever a model, a client or a
re-planner hands in — random node lists, arguments, references, dependency cycles, random JSON —
`PlanValidator.validate` never raises, reports failures only as its typed errors, and never accepts
a plan that is cyclic, dangling, or names a tool outside the registry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contract.plan import Plan, parse_reference
from executors.tools import default_registry
from planner.config import PlannerConfig
from planner.service import PlannerService
from planner.validation import PlanValidationError, PlanValidator
from serving.stack import catalog_of

EXAMPLES = 300
ACCEPTED: list[bool] = []


def _validator() -> PlanValidator:
    service = PlannerService.from_config(PlannerConfig(), llm=None, catalog=catalog_of(default_registry()))  # type: ignore[arg-type]
    return service.validator(service.catalog)


VALIDATOR = _validator()
TOOLS = sorted(VALIDATOR.catalog.names())
IDS = [f"n{i}" for i in range(1, 7)]
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
)

node_id = st.sampled_from(IDS) | st.sampled_from(["n0", "n100", "x", "", "$n1", "n1 "])
reference = st.builds(
    lambda n, f: f"${n}" + (f".{f}" if f else ""),
    st.sampled_from(IDS + ["n9"]),
    st.sampled_from(["", "price", "cheapest.price", "0"]),
)
scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | reference
)
arg_value = st.recursive(
    scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3), max_leaves=8
)
node = st.fixed_dictionaries(
    {
        "id": node_id,
        "tool": st.sampled_from(TOOLS) | st.sampled_from(["transfer_funds", "", "x" * 70]),
        "args": st.dictionaries(st.sampled_from(["city", "date", "origin", "destination", "amounts", "limit", "query", "evil"]), arg_value, max_size=4),
    },
    optional={
        "depends_on": st.lists(node_id, max_size=3),
        "fallback": node_id,
        "success_condition": st.text(max_size=30),
    },
)  # fmt: skip
plan_dict = st.fixed_dictionaries({"nodes": st.lists(node, max_size=7)})


@st.composite
def plausible_plan(draw: st.DrawFn) -> dict[str, Any]:
    """Well-formed nodes with unique ids whose references and depends_on point anywhere (backwards,
    forwards, at themselves, outside the plan): many are valid DAGs, many have cycles."""
    count = draw(st.integers(1, 6))
    ids = [f"n{i}" for i in range(1, count + 1)]
    targets = st.sampled_from(ids + ["n9"])
    nodes = []
    for own in ids:
        city = draw(st.sampled_from(["Hangzhou", "Suzhou"]) | targets.map(lambda t: f"${t}.city"))
        nodes.append(
            {"id": own, "tool": "get_weather", "args": {"city": city, "date": "2027-06-20"},
             "depends_on": draw(st.lists(targets, max_size=2, unique=True))}
        )  # fmt: skip
    return {"nodes": nodes}


any_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
    max_leaves=15,
)


def _upstream(raw: dict[str, Any]) -> set[str]:
    refs: set[str] = set()

    def walk(value: Any) -> None:
        parsed = parse_reference(value)
        if parsed is not None:
            refs.add(parsed[0])
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(raw.get("args", {}))
    return refs | set(raw.get("depends_on", []))


def _acyclic(nodes: Iterable[dict[str, Any]]) -> bool:
    """Kahn's algorithm: an independent check, not the validator's own DFS."""
    upstream = {n["id"]: _upstream(n) for n in nodes}
    indegree = {n: len(up) for n, up in upstream.items()}
    ready = [n for n, d in indegree.items() if d == 0]
    seen = 0
    while ready:
        current = ready.pop()
        seen += 1
        for other, up in upstream.items():
            if current in up:
                indegree[other] -= 1
                if indegree[other] == 0:
                    ready.append(other)
    return seen == len(upstream)


def check(candidate: Any) -> bool:
    """Validate; assert the validator's contract; True when the plan was accepted."""
    report = VALIDATOR.validate(candidate)  # must never raise
    error = report.error
    assert (error is None) == report.ok
    if error is not None:
        assert isinstance(error, PlanValidationError) and error.layer in ("schema", "dag", "arguments", "rules")
        json.loads(error.feedback())  # the re-ask text is always valid JSON
        return False
    plan = report.plan
    assert isinstance(plan, Plan)
    nodes = [n.model_dump() for n in plan.nodes]
    ids = [n["id"] for n in nodes]
    assert nodes and len(ids) == len(set(ids)) <= VALIDATOR.max_nodes
    for raw in nodes:
        assert raw["tool"] in TOOLS, raw
        assert _upstream(raw) <= set(ids) - {raw["id"]}, raw  # no dangling or self reference
        assert raw["fallback"] is None or raw["fallback"] in set(ids) - {raw["id"]}
    assert _acyclic(nodes), nodes
    return True


@FUZZ
@given(candidate=plan_dict)
def test_random_plans_are_never_accepted_cyclic_dangling_or_unknown(candidate: dict[str, Any]) -> None:
    check(candidate)
    check(json.dumps(candidate))  # the same plan as the model's raw text


@FUZZ
@given(candidate=plausible_plan())
def test_plausible_plans_are_accepted_only_when_they_are_dags(candidate: dict[str, Any]) -> None:
    accepted = check(candidate)
    nodes = candidate["nodes"]
    ids = {n["id"] for n in nodes}
    sound = _acyclic(nodes) and all(_upstream(n) <= ids - {n["id"]} for n in nodes)
    assert accepted == sound, nodes  # refused exactly when cyclic or dangling
    ACCEPTED.append(accepted)


@FUZZ
@given(candidate=any_json | st.text(max_size=200) | st.binary(max_size=50).map(lambda b: b.decode("latin-1")))
def test_random_json_and_text_only_yield_typed_errors(candidate: Any) -> None:
    if isinstance(candidate, (str, dict)):
        check(candidate)
    else:
        check({"nodes": candidate})


@FUZZ
@given(length=st.integers(2, 6), back=st.data(), weather=st.booleans())
def test_every_cycle_is_refused_at_the_dag_layer(length: int, back: st.DataObject, weather: bool) -> None:
    """A chain n1 <- n2 <- ... <- nk of valid nodes plus one back edge (by reference or depends_on)."""
    nodes: list[dict[str, Any]] = []
    for i in range(1, length + 1):
        args: dict[str, Any] = {"city": "Hangzhou", "date": "2027-06-20"}
        nodes.append({"id": f"n{i}", "tool": "get_weather", "args": args, "depends_on": [f"n{i - 1}"] if i > 1 else []})
    head = back.draw(st.integers(1, length - 1))
    if weather:
        nodes[head - 1]["args"]["city"] = f"$n{length}.city"
    else:
        nodes[head - 1]["depends_on"].append(f"n{length}")
    report = VALIDATOR.validate({"nodes": nodes})
    assert not report.ok and report.error is not None and report.error.layer == "dag"
    assert any(i.code == "cycle" for i in report.error.issues)


def test_the_plausible_fuzz_exercised_both_verdicts() -> None:
    if ACCEPTED:  # run in the same session (not when that test is deselected)
        assert any(ACCEPTED) and not all(ACCEPTED), f"{sum(ACCEPTED)}/{len(ACCEPTED)} accepted"


def test_self_and_dangling_references_are_refused() -> None:
    base = {"id": "n1", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}}
    for bad in ({**base, "args": {**base["args"], "city": "$n1.city"}},
                {**base, "args": {**base["args"], "city": "$n5.city"}},
                {**base, "depends_on": ["n1"]}, {**base, "depends_on": ["n7"]}, {**base, "fallback": "n1"}):  # fmt: skip
        assert not check({"nodes": [bad]})


def test_a_plan_of_only_standby_nodes_is_refused() -> None:
    """Found by this suite: every node being another's fallback used to pass, and then nothing ran."""
    a = {"id": "n1", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}, "fallback": "n2"}
    b = {"id": "n2", "tool": "get_weather", "args": {"city": "Suzhou", "date": "2027-06-20"}, "fallback": "n1"}
    report = VALIDATOR.validate({"nodes": [a, b]})
    assert not report.ok and "no_primary_node" in json.dumps(report.as_dict())


def test_a_looping_fallback_chain_is_refused() -> None:
    primary = {"id": "n1", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}}
    b = {"id": "n2", "tool": "get_weather", "args": {"city": "Suzhou", "date": "2027-06-20"}, "fallback": "n3"}
    c = {"id": "n3", "tool": "get_weather", "args": {"city": "Xiamen", "date": "2027-06-20"}, "fallback": "n2"}
    report = VALIDATOR.validate({"nodes": [primary, b, c]})
    assert not report.ok and "fallback_cycle" in json.dumps(report.as_dict())
