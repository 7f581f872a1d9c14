"""Sustained concurrency above the gateway's upstream limit, against the REAL engine (marker engine).

16 clients × 6 requests through a gateway admitting 4 at a time: the surplus gets 429 with
Retry-After at once (no queue, no timeouts piling up), every request is answered exactly once, the
engine finished exactly the requests the gateway answered 200 (when the engine is this session's
own), response ids are unique, and the gateway's memory stays bounded. The report is written to the
test's temp folder; `python -m benchmarks.reliability_load` (same code) writes the committed
benchmarks/results/reliability_load.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.reliability_load import run_load, write_report
from serving.settings import GatewaySettings
from tests.conftest import KEY_A, RunningGateway

pytestmark = pytest.mark.engine

LIMIT, CLIENTS, PER_CLIENT = 4, 16, 6
RSS_GROWTH_MB = 64


def test_back_pressure_under_sustained_overload(
    gateway_factory: Callable[..., RunningGateway],
    engine_url: str,
    engine_headers: dict[str, str],
    engine_model: str,
    tmp_path: Path,
) -> None:
    gateway = gateway_factory(gateway=GatewaySettings(max_concurrent_upstream=LIMIT))
    report = run_load(
        gateway.url,
        engine_url,
        key=KEY_A,
        model=engine_model,
        max_concurrent_upstream=LIMIT,
        clients=CLIENTS,
        per_client=PER_CLIENT,
        max_tokens=8,
        engine_headers=engine_headers,
    )
    assert write_report(report, tmp_path).is_file()
    statuses = report.statuses()
    # every request answered exactly once, and only with success or back-pressure
    assert len(report.outcomes) == CLIENTS * PER_CLIENT
    assert len({(o.client, o.seq) for o in report.outcomes}) == CLIENTS * PER_CLIENT
    assert set(statuses) <= {200, 429}, statuses
    assert statuses[429] > 0 and statuses[200] >= CLIENTS  # overload was real, and work still got done
    assert all(o.retry_after == "1" for o in report.outcomes if o.status == 429)
    # no duplicates: the gateway never retries on its own
    ids = [o.response_id for o in report.outcomes if o.status == 200]
    assert len(ids) == len(set(ids)) == statuses[200]
    # the engine finished exactly what the gateway answered 200 (more if others share the engine)
    assert report.engine_delta is not None
    if os.environ.get("PLANSTACK_TEST_ENGINE_URL"):
        assert report.engine_delta >= statuses[200]
    else:
        assert report.engine_delta == statuses[200]
    # back-pressure is immediate and bounded: requests held never exceed the limit
    assert report.max_in_flight <= LIMIT
    assert report.summary()["p95_429_s"] < 0.5
    assert report.rss_after_mb is not None and report.rss_before_mb is not None
    assert report.rss_after_mb - report.rss_before_mb < RSS_GROWTH_MB
