"""Where the toolsets' in-process CPU work runs: off the event loop, behind one function.

A client's input is checked by the door (serving/door, jobs in serving/toolsets/checks.py: imports,
definitions, the caller's tools, outputs), in worker processes on the tenant's fair share. What is
left here builds objects this process keeps and calls — the scheduler's specs of a run's recorded
tools, their compiled argument and output checkers — from definitions the door already accepted, so
it cannot cross a process boundary; a worker thread keeps it off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


async def off_loop(func: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`func(*args, **kwargs)` in a worker thread; its result or its exception."""
    return await asyncio.to_thread(func, *args, **kwargs)
