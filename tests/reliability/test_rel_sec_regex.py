"""A client tool's `pattern` cannot freeze the gateway.

`^(a|a)*$` on a 24-character value took Python's backtracking `re` 0.6 s of the event loop per
planning attempt, in the planner's grammar (`_fits`) and in the argument validator. Every client
pattern is now matched by RE2 (planner/safe_regex.py, linear time), and a pattern RE2 cannot take
(backreferences, lookaround) is refused at the door with a 400.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.catalog import CatalogError, ToolCatalog
from tests.reliability.helpers import check_error_shape
from tests.reliability.sec_helpers import gateway_process, probe_during

pytestmark = [pytest.mark.fake_upstream, pytest.mark.timeout(300)]

EVIL = "^(a|a)*$"
VALUE = "a" * 23 + "b"  # 24 characters: 2^23 backtracking steps per match in Python re


def tool(pattern: str, name: str = "match_code") -> dict[str, object]:
    parameters = {
        "type": "object",
        "properties": {"code": {"type": "string", "pattern": pattern}},
        "required": ["code"],
    }
    return {"type": "function", "function": {"name": name, "description": "Match a code.", "parameters": parameters}}


def test_catastrophic_pattern_leaves_health_fast(tmp_path: Path) -> None:
    # The fake model answers every planning call with the tool and the hostile value: the value is
    # in the request (grammar values) and in the decoded arguments (the argument validator).
    reply = json.dumps({"tools": ["match_code"], "code": VALUE})
    with gateway_process(tmp_path, reply) as gateway, gateway.client() as client:

        def attack(_: int) -> list[int]:
            statuses = []
            for _ in range(2):
                body = {"request": f'check the code "{VALUE}"', "tools": [tool(EVIL)]}
                response = client.post("/v1/plans", json=body)
                check_error_shape(response)
                statuses.append(response.status_code)
            return statuses

        probe, results = probe_during(gateway.url, attack)
    print(f"\n^(a|a)*$ on 24 characters, 2 plans: statuses {results}; /health {probe.report()}")
    assert not probe.loop_stalls, f"/health during the attack: {probe.report()}"
    assert all(s in (200, 422) for statuses in results for s in statuses), results  # planned or planning_failed


REFUSED = [r"^(a)\1$", r"^(?=a)a$", r"^(?!b).*$", r"(?<=x)y", "a" * 1001]


def test_patterns_re2_refuses_are_a_400(tmp_path: Path) -> None:
    with gateway_process(tmp_path) as gateway, gateway.client() as client:
        for pattern in REFUSED:
            response = client.post("/v1/plans", json={"request": "check a code", "tools": [tool(pattern)]})
            check_error_shape(response)
            assert response.status_code == 400, (pattern, response.text)
            error = response.json()["error"]
            assert error["param"] == "tools" and "pattern" in error["message"], error


def test_catalog_names_every_refused_pattern() -> None:
    nested = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "pattern": r"(x)\1"},
            "b": {"type": "array", "items": {"type": "string", "pattern": "(?=y)"}},
            "c": {"type": "object", "patternProperties": {"(?!z)": {"type": "string"}}},
        },
    }
    entry = {"type": "function", "function": {"name": "t", "parameters": nested}}
    with pytest.raises(CatalogError) as caught:
        ToolCatalog.from_openai([entry])
    where = " ".join(caught.value.problems)
    assert "properties.a.pattern" in where and "properties.b.items.pattern" in where
    assert "properties.c.patternProperties" in where
