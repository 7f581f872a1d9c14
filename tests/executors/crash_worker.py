"""Child process of the crash tests: run a plan with the counting tools until the tool kills us.

python crash_worker.py STORE CALLS_FILE RUN_ID PLAN_JSON
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from exec_helpers import counting_registry  # noqa: E402

from executors.runs import RunService  # noqa: E402
from executors.scheduler import DagScheduler  # noqa: E402
from executors.store import SqliteRunStore  # noqa: E402
from planner.plan import Plan  # noqa: E402


def main(store_path: str, calls_file: str, run_id: str, plan_json: str) -> None:
    store = SqliteRunStore(store_path)
    service = RunService(store, DagScheduler(counting_registry(Path(calls_file))), new_id=lambda: run_id)
    asyncio.run(service.run("alice", "crash test", Plan.model_validate_json(plan_json)))


if __name__ == "__main__":
    main(*sys.argv[1:5])
