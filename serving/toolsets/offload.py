"""Where the toolsets' CPU-heavy work runs: off the event loop, behind one function.

Importing an OpenAPI document (seconds for a large one) and compiling tools' argument and output
checkers must never hold the gateway's event loop. Today that is a worker thread
(`asyncio.to_thread`); a shared, fair worker pool for the gateway's CPU-heavy checks can replace it
here without touching the callers.
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
