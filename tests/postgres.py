"""A REAL PostgreSQL server for the test session (pytest plugin, loaded by tests/conftest.py).

Debian's `postgresql` binaries (installed by scripts/ensure_postgres.sh when missing: CI runs as
root with Debian's registry), `initdb` in a temporary folder, listening on 127.0.0.1 on a free port
and on a unix socket in that folder, started once per session on first use and stopped (folder
removed) at the end. PostgreSQL refuses to run as root, so as root it runs as the `postgres` user.

- `postgres_server` (session): the running server.
- `postgres_url` (function): a fresh, empty database per test.

`python -m tests.postgres` starts one by hand (prints its URL; Ctrl-C stops it), e.g. for benchmarks.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import pytest

from tests.fakes.upstream import free_port

REPO = Path(__file__).resolve().parent.parent
ENSURE_SCRIPT = REPO / "scripts" / "ensure_postgres.sh"
SUPERUSER = "planstack"


def postgres_bin() -> Path:
    """The folder with initdb/postgres; installs the Debian package first when it is missing."""
    found = subprocess.run(["bash", str(ENSURE_SCRIPT)], capture_output=True, text=True, check=False)
    if found.returncode != 0 or not found.stdout.strip():
        raise RuntimeError(f"PostgreSQL is not available: {found.stderr.strip()[-500:]}")
    return Path(found.stdout.strip().splitlines()[-1])


@dataclass
class PostgresServer:
    bin_dir: Path
    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def _user(self) -> str | None:
        return "postgres" if os.geteuid() == 0 else None

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def start(self) -> PostgresServer:
        data, log = self.folder / "data", self.folder / "server.log"
        if self._user is not None:
            shutil.chown(self.folder, self._user)
        subprocess.run(
            [str(self.bin_dir / "initdb"), "-D", str(data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8",
             "--locale=C", "--no-sync"],
            check=True, capture_output=True, user=self._user,
        )  # fmt: skip
        with log.open("wb") as out:
            self.process = subprocess.Popen(
                [str(self.bin_dir / "postgres"), "-D", str(data), "-h", "127.0.0.1", "-p", str(self.port),
                 "-k", str(self.folder), "-c", "fsync=off", "-c", "synchronous_commit=off",
                 "-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "shared_buffers=32MB"],
                stdout=out, stderr=subprocess.STDOUT, user=self._user,
            )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited: {log.read_text()[-2000:]}")
            with contextlib.suppress(psycopg.OperationalError):
                psycopg.connect(self.url(), connect_timeout=2).close()
                return self
            if time.monotonic() > deadline:
                raise RuntimeError(f"postgres did not start: {log.read_text()[-2000:]}")
            time.sleep(0.1)

    def create_database(self) -> str:
        name = "t_" + uuid.uuid4().hex[:16]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        shutil.rmtree(self.folder, ignore_errors=True)


def start_server() -> PostgresServer:
    folder = Path(tempfile.mkdtemp(prefix="planstack-pg-"))
    if os.geteuid() == 0:
        pwd.getpwnam("postgres")  # created by the Debian package
    server = PostgresServer(postgres_bin(), folder)
    try:
        return server.start()
    except BaseException:
        server.stop()
        raise


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = start_server()
    try:
        yield server
    finally:
        server.stop()
    assert server.process is not None and server.process.poll() is not None, "postgres outlived the session"


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    return postgres_server.create_database()


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _stop_on_sigterm)  # `kill PID` stops the server too, not only Ctrl-C
    running = start_server()
    print(running.create_database(), flush=True)
    try:
        while running.process is not None and running.process.poll() is None:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        running.stop()
