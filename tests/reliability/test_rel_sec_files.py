"""Secrets and state on disk are private.

The cache-salt secret (and the engine key, which uses the same code) is created atomically with mode
0600 even under a permissive umask; an existing one open to group/others, or empty, is refused with
the fix; the run store and the retrieval index folders are 0600/0700."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from retrieval.collection import ChunkDraft
from retrieval.config import RetrievalConfig
from retrieval.store import CollectionRef, IndexStore
from serving.errors import ConfigError
from serving.isolation import load_or_create_secret
from tests.conftest import FakeStack
from tests.retrieval.fakes import HashingEmbedder


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """umask 000: whatever is private here is private by its own mode, not by luck."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def test_secret_is_created_private_and_atomically(tmp_path: Path, open_umask: None) -> None:
    path = tmp_path / "home" / "secret"
    values: list[bytes] = []
    errors: list[BaseException] = []

    def create() -> None:
        try:
            values.append(load_or_create_secret(path))
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(8)]  # racing first starts agree on one secret
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert len(set(values)) == 1 and len(values[0]) == 32
    assert mode(path) == 0o600 and mode(path.parent) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == ["secret"]  # no temporary left behind
    assert load_or_create_secret(path) == values[0]


@pytest.mark.parametrize("bits", [0o644, 0o640, 0o604, 0o660], ids=lambda bits: f"{bits:03o}")
def test_secret_open_to_others_is_refused_with_the_fix(tmp_path: Path, bits: int) -> None:
    path = tmp_path / "secret"
    path.write_text("ab" * 32)
    path.chmod(bits)
    with pytest.raises(ConfigError) as caught:
        load_or_create_secret(path)
    assert f"{bits:03o}" in caught.value.message and caught.value.hint == f"chmod 600 {path}"


@pytest.mark.parametrize("content", ["", "\n", "not-hex", "abcd"])
def test_empty_or_bad_secret_is_refused_with_the_fix(tmp_path: Path, content: str) -> None:
    path = tmp_path / "secret"
    path.write_text(content)
    path.chmod(0o600)
    with pytest.raises(ConfigError) as caught:
        load_or_create_secret(path)
    assert caught.value.hint is not None and f"rm {path}" in caught.value.hint


@pytest.mark.fake_upstream
def test_gateway_state_is_private(fake_stack_factory: Callable[..., FakeStack], tmp_path: Path) -> None:
    previous = os.umask(0o022)  # a common default: files 0644, folders 0755 unless made private
    try:
        stack = fake_stack_factory(secret=None)
        with stack.gateway.client() as client:
            plan = {"nodes": [{"id": "n1", "tool": "get_weather", "args": {"city": "Hangzhou", "date": "2027-06-20"}}]}
            assert client.post("/v1/runs", json={"request": "weather", "plan": plan, "wait": True}).status_code == 200
    finally:
        os.umask(previous)
    home = stack.gateway.settings.home
    assert mode(home / "secret") == 0o600
    store_files = sorted(home.glob("runs.sqlite3*"))
    assert [p.name for p in store_files][:1] == ["runs.sqlite3"]
    assert all(mode(p) == 0o600 for p in store_files), {p.name: oct(mode(p)) for p in store_files}


def test_index_folders_and_files_are_private(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        embedder = HashingEmbedder()
        store = IndexStore(tmp_path / "indexes", RetrievalConfig())
        for tenant in (None, "tenantA"):
            collection = store.create(CollectionRef("notes", tenant), dim=embedder.dim, model_name=embedder.name)
            collection.add([ChunkDraft("a private fact", "doc.md")], embedder.embed(["a private fact"]))
            store.save(collection)
    finally:
        os.umask(previous)
    root = tmp_path / "indexes"
    folders = [root, *(p for p in root.rglob("*") if p.is_dir())]
    files = [p for p in root.rglob("*") if p.is_file()]
    assert len(folders) >= 5 and len(files) >= 8
    assert all(mode(p) == 0o700 for p in folders), {str(p): oct(mode(p)) for p in folders}
    assert all(mode(p) == 0o600 for p in files), {str(p): oct(mode(p)) for p in files}
