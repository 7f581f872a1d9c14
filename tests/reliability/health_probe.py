"""A separate client measuring `/health` latency (its own process: the test's threads cannot delay
it): prints one latency in milliseconds per line, every INTERVAL seconds, until killed.

    python -m tests.reliability.health_probe URL INTERVAL
"""

from __future__ import annotations

import sys
import time

import httpx


def main(url: str, interval_s: float) -> None:
    with httpx.Client(base_url=url, timeout=5) as client:
        while True:
            started = time.perf_counter()
            status = client.get("/health").status_code
            print(f"{status} {(time.perf_counter() - started) * 1000:.1f}", flush=True)
            time.sleep(interval_s)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
