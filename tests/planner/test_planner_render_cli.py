from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from planner.render import render_tree
from serving.cli import app
from tests.planner.helpers import node, plan


def test_tree_shows_every_node_once_with_extra_links() -> None:
    tree = render_tree(
        plan(
            node("n1", "search_flights", {"origin": "A"}),
            node("n2", "search_hotels", {"city": "B"}),
            node("n3", "check_budget", {"amounts": ["$n1.cheapest.price", "$n2.best.price_per_night"], "limit": 1}),
        )
    )
    lines = tree.splitlines()
    assert len(lines) == 3 and lines[0].startswith("n1 search_flights") and "⇐ n1" in lines[2]
    assert render_tree(plan()) == "(empty plan)"


def test_cli_rejects_a_bad_tools_file(tmp_path: Path) -> None:
    bad = tmp_path / "tools.json"
    bad.write_text(json.dumps([{"type": "function", "function": {"name": "bad name"}}]))
    result = CliRunner().invoke(app, ["plan", "hello", "--tools", str(bad)])
    assert result.exit_code == 2 and "must match" in result.output
