"""`planstack index …`: the knowledge base of the composition root, from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from retrieval.embedder import SentenceTransformerEmbedder
from serving.cli import app
from tests.retrieval.fakes import HashingEmbedder

SECRET = {"PLANSTACK_SECRET": "index-test-secret-0000000000000"}


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    embedder = HashingEmbedder()
    monkeypatch.setattr(SentenceTransformerEmbedder, "from_config", classmethod(lambda _cls, _cfg: embedder))
    return CliRunner()


def _run(runner: CliRunner, home: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    options = {"COLUMNS": "200", **SECRET, **(env or {})}
    result = runner.invoke(app, ["index", "--home", str(home), *args], env=options)
    return result.exit_code, result.output


def test_build_list_query_info_delete(runner: CliRunner, tmp_path: Path) -> None:
    code, out = _run(runner, tmp_path, "build")
    assert code == 0, out
    assert "travel" in out and "contracts" in out
    assert (tmp_path / "indexes" / "shared" / "travel" / "manifest.json").is_file()

    code, out = _run(runner, tmp_path, "list")
    assert code == 0 and "venues" in out and "test-hashing" in out

    code, out = _run(runner, tmp_path, "query", "hotel caps per city London Paris", "--k", "2", "--json")
    assert code == 0, out
    passages = json.loads(out)
    assert len(passages) == 2 and passages[0]["source"] == "travel/hotel-caps.md"

    code, out = _run(runner, tmp_path, "query", "hotel", "--collection", "venues", "--json")
    assert code == 0 and all(p["domain"] == "venues" for p in json.loads(out))

    code, out = _run(runner, tmp_path, "info", "--collection", "travel")
    assert code == 0 and json.loads(out)["name"] == "travel"

    code, out = _run(runner, tmp_path, "delete-doc", "travel/hotel-caps.md", "--collection", "travel")
    assert code == 0 and "deleted" in out
    code, out = _run(runner, tmp_path, "delete-doc", "travel/hotel-caps.md", "--collection", "travel")
    assert code == 1

    code, out = _run(runner, tmp_path, "build", "--collection", "travel")  # incremental: re-adds the doc
    assert code == 0 and "travel" in out and "venues" not in out


def test_errors_are_reported_with_the_fix(runner: CliRunner, tmp_path: Path) -> None:
    assert _run(runner, tmp_path, "build", "--collection", "travel")[0] == 0
    index = next((tmp_path / "indexes" / "shared" / "travel").glob("index.*.faiss"))
    index.write_bytes(b"garbage")
    code, out = _run(runner, tmp_path, "info", "--collection", "travel")
    assert code == 1 and "checksum" in out and "planstack index build --collection travel" in out
    code, out = _run(runner, tmp_path, "build", "--collection", "travel")  # the fix works
    assert code == 0 and "rebuilt" in out
    assert _run(runner, tmp_path, "info", "--collection", "travel")[0] == 0
    code, out = _run(runner, tmp_path, "info", "--collection", "../etc")
    assert code == 1 and "invalid collection name" in out
    code, out = _run(runner, tmp_path, "query", "x", "--collection", "nope")
    assert code == 1 and "does not exist" in out


def test_retrieval_settings_come_from_the_configuration(runner: CliRunner, tmp_path: Path) -> None:
    overrides = {
        "PLANSTACK_RETRIEVAL__CHUNK_SIZE": "300",
        "PLANSTACK_RETRIEVAL__CHUNK_OVERLAP": "0",
        "PLANSTACK_RETRIEVAL__INDEX_TYPE": "hnsw",
    }
    code, out = _run(runner, tmp_path, "build", "--collection", "venues", env=overrides)
    assert code == 0, out
    manifest = json.loads(_run(runner, tmp_path, "info", "--collection", "venues")[1])
    assert manifest["index_type"] == "hnsw"


def test_home_from_the_settings(runner: CliRunner, tmp_path: Path) -> None:
    """Without --home the indexes live in the configured home (PLANSTACK_HOME here)."""
    result = runner.invoke(
        app, ["index", "build", "--collection", "travel"], env={"PLANSTACK_HOME": str(tmp_path), **SECRET}
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "indexes" / "shared" / "travel" / "manifest.json").is_file()
