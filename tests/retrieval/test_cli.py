from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from retrieval import cli
from retrieval.config import RetrievalConfig
from tests.retrieval.fakes import HashingEmbedder


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    embedder = HashingEmbedder()
    monkeypatch.setattr(cli.SentenceTransformerEmbedder, "from_config", classmethod(lambda _cls, _cfg: embedder))
    return CliRunner()


def _run(runner: CliRunner, home: Path, *args: str, obj: object = None) -> tuple[int, str]:
    result = runner.invoke(cli.app, ["--home", str(home), *args], obj=obj, env={"COLUMNS": "200"})
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


def test_settings_from_parent_command(runner: CliRunner, tmp_path: Path) -> None:
    class Settings:
        retrieval = RetrievalConfig(chunk_size=300, chunk_overlap=0, index_type="hnsw")

    code, out = _run(runner, tmp_path, "build", "--collection", "venues", obj=Settings())
    assert code == 0, out
    manifest = json.loads(_run(runner, tmp_path, "info", "--collection", "venues")[1])
    assert manifest["index_type"] == "hnsw"


def test_home_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PLANSTACK_HOME", str(tmp_path))
    assert cli.default_home() == tmp_path
