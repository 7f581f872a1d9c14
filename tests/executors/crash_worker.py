"""Child process of the crash tests: run a plan with the counting tools until the tool kills us.

python crash_worker.py STORE_URL CALLS_FILE RUN_ID PLAN_JSON

The run's lease is short (CRASH_LEASE), so that the test can continue the run soon after we die.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from exec_helpers import counting_registry  # noqa: E402

from contract.plan import Plan  # noqa: E402
from executors.runs import RunService  # noqa: E402
from executors.scheduler import DagScheduler  # noqa: E402
from executors.stores import RunsConfig, open_run_store  # noqa: E402

CRASH_LEASE = RunsConfig(lease_ttl_s=1.0, heartbeat_s=0.2)


async def main(store_url: str, calls_file: str, run_id: str, plan_json: str) -> None:
    store = open_run_store(store_url, config=CRASH_LEASE)
    service = RunService(store, DagScheduler(counting_registry(Path(calls_file))), new_id=lambda: run_id)
    await service.run("alice", "crash test", Plan.model_validate_json(plan_json))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
