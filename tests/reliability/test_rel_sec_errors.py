"""Client field names are escaped in logs, and error bodies carry no
server file paths and no raw SQLite messages. Each is triggered through a real gateway."""

from __future__ import annotations

import errno
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from executors.stores import RunStoreError, SqliteRunStore
from serving.app import create_app
from serving.redaction import describe_store_failure
from serving.settings import EngineSettings, Settings
from serving.stack import build_stack
from tests.conftest import API_KEYS, FAKE_MODEL, KEY_A, FakeStack
from tests.fakes.upstream import ServerThread
from tests.reliability.helpers import check_error_shape, fault_registry

HOSTILE_FIELDS = [
    "evil\n2026-01-01 00:00:00 ERROR planstack.auth: forged line",
    "\x1b[31mred\x1b[0m\r",
    "\u202eoverride",
    "long" * 200,
]


@pytest.mark.fake_upstream
def test_logged_client_field_names_are_escaped_and_bounded(
    fake_stack: FakeStack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="planstack")
    body: dict[str, object] = {"model": FAKE_MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    body.update({name: 1 for name in HOSTILE_FIELDS})
    with fake_stack.gateway.client() as client:
        assert client.post("/v1/chat/completions", json=body).status_code == 200
    lines = [r.getMessage() for r in caplog.records if "unknown request fields" in r.getMessage()]
    assert len(lines) == 1, [r.getMessage() for r in caplog.records]
    line = lines[0]
    assert not any(ch in line for ch in "\n\r\x1b\u202e"), repr(line)
    assert "\\n2026-01-01" in line and "\\x1b[31m" in line and "\\u202e" in line  # escaped, still readable
    assert len(line) < 400 and "long" * 30 not in line


@pytest.mark.fake_upstream
def test_engine_error_bodies_carry_no_server_paths(fake_stack: FakeStack) -> None:
    fake_stack.behaviour.status = 400
    fake_stack.behaviour.error_message = (
        "could not load /root/.cache/planstack/models/smollm2-135m-instruct/tokenizer.json "
        "(see /home/svc/planstack/logs/engine-8001.log) for /v1/chat/completions"
    )
    body = {"model": FAKE_MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    with fake_stack.gateway.client() as client:
        response = client.post("/v1/chat/completions", json=body)
    check_error_shape(response)
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert "/root/" not in message and "/home/" not in message and ".cache" not in message, message
    assert message.count("<path>") == 2 and "/v1/chat/completions" in message  # API routes are kept


def _store_gateway(tmp_path: Path) -> tuple[ServerThread, Callable[[], SqliteRunStore]]:
    settings = Settings(home=tmp_path, api_keys=SecretStr(API_KEYS), engine=EngineSettings(port=1))
    app = create_app(build_stack(settings, engine_model=FAKE_MODEL, registry=fault_registry(tmp_path / "calls.txt")))
    server = ServerThread(app).start()
    return server, lambda: app.state.services.run_gateway.runs.store


@pytest.mark.parametrize(
    ("pragma", "phrase", "raw"),
    [
        ("PRAGMA query_only = ON", "it is read-only", "attempt to write a readonly database"),
        ("PRAGMA max_page_count = 1", "the disk is full", "database or disk is full"),
    ],
)
def test_run_store_errors_are_typed_without_sqlite_messages(tmp_path: Path, pragma: str, phrase: str, raw: str) -> None:
    server, store_of = _store_gateway(tmp_path)
    plan = {"nodes": [{"id": "n1", "tool": "step", "args": {"label": "x" * 8000}}]}
    try:
        with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {KEY_A}"}, timeout=60) as client:
            store_of()._conn.execute(pragma)  # every write now fails, as on a read-only mount or a full disk
            refused = client.post("/v1/runs", json={"request": "refused", "plan": plan, "wait": True})
    finally:
        server.stop()
    check_error_shape(refused)
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "run_store_unavailable"
    message = refused.json()["error"]["message"]
    assert message.startswith("the run store is unavailable: " + phrase), message
    assert raw not in message and "sqlite" not in message.lower() and str(tmp_path) not in refused.text


@pytest.mark.parametrize(
    ("cause", "phrase"),
    [
        (OSError(errno.ENOSPC, "No space left on device", "/srv/planstack/runs.sqlite3"), "the disk is full"),
        (OSError(errno.EROFS, "Read-only file system", "/srv/planstack/runs.sqlite3"), "it is read-only"),
        (sqlite3.OperationalError("unable to open database file /srv/x"), "a database error"),
    ],
)
def test_store_failures_are_described_without_their_messages(cause: BaseException, phrase: str) -> None:
    try:
        try:
            raise cause
        except (OSError, sqlite3.Error) as exc:
            raise RunStoreError(f"the run store cannot write: {exc}") from exc
    except RunStoreError as wrapped:
        assert describe_store_failure(wrapped) == phrase
