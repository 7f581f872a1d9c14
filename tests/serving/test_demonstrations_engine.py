"""A tenant's memory on the REAL engine: an imported demonstration gives the planner its structure.

One real gateway in front of the real vLLM engine (marker `engine`): tenant A imports one solved request
for its own tools; a paraphrase of it is then planned with that demonstration's structure (its tools and
its reference, the edge) and the model writes the arguments; tenant B, with an empty memory, does not
get that structure; feedback on A's plan id is accepted.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import KEY_A, KEY_B, RunningGateway
from tests.serving.test_demonstrations import GOLD, REQUEST, TOOLS, lines

pytestmark = pytest.mark.engine
PARAPHRASE = "Please get the weather in Oslo and email it to ops@example.com"


def test_an_imported_demonstration_shapes_the_plan(gateway_factory: Callable[..., RunningGateway]) -> None:
    gateway = gateway_factory()
    with gateway.client(KEY_A) as alice, gateway.client(KEY_B) as bob:
        imported = alice.post("/v1/demonstrations", content=lines({"tools": TOOLS}, {"request": REQUEST, "plan": GOLD}))
        assert imported.status_code == 200 and imported.json()["added"] == 1, imported.text

        answer = alice.post("/v1/plans", json={"request": PARAPHRASE, "tools": TOOLS})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["path"] in ("model", "model_retry"), body
        assert body["attempts"][0]["tools_from"] == "skeleton"
        nodes = body["plan"]["nodes"]
        assert [n["tool"] for n in nodes] == ["get_weather", "send_email"]
        assert nodes[1]["args"]["body"] == "$n1"  # the demonstration's edge
        assert nodes[0]["args"]["city"] == "Oslo" and nodes[1]["args"]["to"] == "ops@example.com"

        other = bob.post("/v1/plans", json={"request": PARAPHRASE, "tools": TOOLS}).json()
        assert all(a["tools_from"] != "skeleton" for a in other["attempts"])

        feedback = alice.post(f"/v1/plans/{body['plan_id']}/feedback", json={"accepted": True})
        assert feedback.status_code == 200 and feedback.json()["status"] == "added"
        assert alice.get("/v1/demonstrations").json()["usage"]["count"] == 2
