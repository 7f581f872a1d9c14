"""Child processes of the security tests: a real gateway (uvicorn) in its own process, so that a test
can attack it and time `/health` from outside while the attack runs; and the fake upstream in
another one, so that the test's own threads cannot slow the gateway's engine probe.

The tools are the demo tools plus the test tools of `helpers.fault_registry` and `bulk(count)` (an
output of `count` small objects, for worst-case conditions). The engine is whatever listens at
ENGINE_URL (the tests' fake upstream). With MODEL_DIR the schema guard runs its real compile worker
over that model's vocabulary. Other settings come from PLANSTACK_* variables as usual.

python -m tests.reliability.sec_worker gateway HOME PORT ENGINE_URL [MODEL_DIR]
python -m tests.reliability.sec_worker upstream PORT REPLY
python -m tests.reliability.sec_worker probe URL INTERVAL_S   (GET URL/health until stdin closes; one latency a line)
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlparse

import httpx
import uvicorn
from pydantic import BaseModel, SecretStr

from serving.app import create_app
from serving.settings import EngineSettings, Settings
from serving.stack import build_stack
from tests.conftest import API_KEYS, FAKE_MODEL
from tests.fakes.upstream import FakeBehaviour, create_fake_upstream
from tests.reliability.helpers import fault_registry


class Bulk(BaseModel):
    items: list[dict[str, str | int]]


def gateway(home: str, port: str, engine_url: str, model_dir: str | None = None) -> None:
    parsed = urlparse(engine_url)
    engine = EngineSettings(host=parsed.hostname or "127.0.0.1", port=parsed.port or 80, connect_timeout_s=0.5)
    settings = Settings(home=Path(home), api_keys=SecretStr(API_KEYS), engine=engine)
    registry = fault_registry(Path(home) / "calls.txt")

    @registry.tool(version="1", timeout_s=30)
    def bulk(count: int) -> Bulk:
        """`count` (≤ 7,000) small objects: about 1 MiB of JSON at the most."""
        return Bulk(items=[{"id": f"{i:06d}" + "x" * 114, "n": i} for i in range(min(count, 7_000))])

    model = Path(model_dir) if model_dir else None
    app = create_app(build_stack(settings, engine_model=FAKE_MODEL, model_dir=model, registry=registry))
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")


def upstream(port: str, reply: str) -> None:
    app = create_fake_upstream(FAKE_MODEL, FakeBehaviour(reply=reply))
    uvicorn.run(app, host="127.0.0.1", port=int(port), log_level="warning")


def probe(url: str, interval_s: str) -> None:
    """Time GET /health from this process (not the test's, whose own threads hold its GIL) until
    stdin is closed; print each latency in seconds."""
    import select
    import time

    with httpx.Client(base_url=url, timeout=30) as client:
        while True:
            started = time.perf_counter()
            client.get("/health")
            print(f"{time.perf_counter() - started:.6f}", flush=True)
            if select.select([sys.stdin], [], [], float(interval_s))[0]:
                return  # stdin closed (or written to): the test is done


if __name__ == "__main__":
    {"gateway": gateway, "upstream": upstream, "probe": probe}[sys.argv[1]](*sys.argv[2:6])
