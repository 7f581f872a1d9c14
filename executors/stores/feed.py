"""Wake-ups of run-event followers: one fan-out per store and process, keyed by run.

A follower `subscribe`s to one run and sleeps until that run changes; it is never woken by another
run's events, nor by events it has already read (it says how far it read with `read_up_to`), and it
never polls. Three sources wake it:

- an event appended by this process (`publish`, at once);
- a backend listener, when the backend has one (PostgreSQL LISTEN/NOTIFY: events of other replicas
  arrive at once);
- one watch task per process that, while anything is followed, reads the state of all followed runs
  in ONE query per `follow_poll_s` tick (last event, live lease, status) and wakes the followers of
  the runs that changed: new events written by another process (SQLite) and drivers that died
  (both backends: a dead driver writes nothing, only its lease expiry tells).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from executors.stores.records import WatchState

logger = logging.getLogger("planstack.executors.stores.feed")

WatchQuery = Callable[[list[str]], Awaitable[dict[str, WatchState]]]
Listener = Callable[["EventFeed"], Coroutine[Any, Any, None]]


class Subscription:
    """One follower of one run. `wait()` returns once the run changed since the last `wait()`."""

    def __init__(self, feed: EventFeed, run_id: str) -> None:
        self.run_id = run_id
        self.wakeups = 0
        self.seen = 0  # the last event seq this follower has read; events up to it do not wake it
        self._feed = feed
        self._changed = asyncio.Event()

    def notify(self) -> None:
        self.wakeups += 1
        self._changed.set()

    def read_up_to(self, seq: int) -> None:
        """The follower has read the run's events up to `seq`: only a later one (or a change of the
        run's state) wakes it. Without this, the watch's first look at a run (whose events were appended
        before anyone followed it) would wake every follower for events they had just read."""
        self.seen = max(self.seen, seq)

    async def wait(self) -> None:
        await self._changed.wait()
        self._changed.clear()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self._feed.unsubscribe(self)


class EventFeed:
    def __init__(self, watch: WatchQuery, poll_s: float, listener: Listener | None = None) -> None:
        self._watch = watch
        self._poll_s = poll_s
        self._listener = listener
        self._subs: dict[str, set[Subscription]] = {}
        self._seq: dict[str, int] = {}
        self._state: dict[str, tuple[bool, str]] = {}
        self._watcher: asyncio.Task[None] | None = None
        self._listening: asyncio.Task[None] | None = None
        self._live = asyncio.Event()
        self.ticks = 0

    # -- followers -------------------------------------------------------------------------------

    def subscribe(self, run_id: str) -> Subscription:
        sub = Subscription(self, run_id)
        self._subs.setdefault(run_id, set()).add(sub)
        self._ensure_tasks()
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        subs = self._subs.get(sub.run_id)
        if subs is None:
            return
        subs.discard(sub)
        if not subs:
            del self._subs[sub.run_id]
            self._seq.pop(sub.run_id, None)
            self._state.pop(sub.run_id, None)

    @property
    def followers(self) -> int:
        return sum(len(subs) for subs in self._subs.values())

    # -- sources ---------------------------------------------------------------------------------

    def publish(self, run_id: str, seq: int | None = None) -> None:
        """Run `run_id` changed (event `seq` was appended): wake its followers, nobody else."""
        subs = self._subs.get(run_id)
        if not subs:
            return
        if seq is not None:
            if seq <= self._seq.get(run_id, 0):
                return  # already delivered (e.g. our own NOTIFY coming back)
            self._seq[run_id] = seq
        for sub in list(subs):
            if seq is None or sub.seen < seq:
                sub.notify()

    def publish_all(self) -> None:
        """Something may have been missed (a listener reconnected): every follower re-reads once."""
        for subs in list(self._subs.values()):
            for sub in list(subs):
                sub.notify()

    def listener_up(self) -> None:
        """The backend listener is listening (first time or again). Events appended before that were
        not announced to it, so every follower re-reads once instead of waiting for the watch tick."""
        self._live.set()
        self.publish_all()

    def listener_down(self) -> None:
        self._live.clear()

    async def wait_live(self) -> None:
        """Return once a backend listener hears every later event (at once without a listener)."""
        if self._listener is None:
            return
        self._ensure_tasks()
        await self._live.wait()

    def _ensure_tasks(self) -> None:
        loop = asyncio.get_running_loop()
        if _finished_or_foreign(self._watcher, loop):
            self._watcher = loop.create_task(self._watch_loop(), name="planstack-run-watch")
        if self._listener is not None and _finished_or_foreign(self._listening, loop):
            self._live = asyncio.Event()  # a new listener task on this loop: not listening yet
            self._listening = loop.create_task(self._listener(self), name="planstack-run-listen")

    async def _watch_loop(self) -> None:
        while self._subs:
            await asyncio.sleep(self._poll_s)
            run_ids = sorted(self._subs)
            if not run_ids:
                return
            self.ticks += 1
            try:
                states = await self._watch(run_ids)
            except Exception as exc:  # noqa: BLE001 - the store is down: followers keep waiting, next tick retries
                logger.warning("run watch: %s", exc)
                continue
            for run_id in run_ids:
                state = states.get(run_id)
                if state is None:  # purged while followed
                    self.publish(run_id)
                    continue
                key = (state.driven, state.status)
                if self._state.get(run_id, key) != key:  # its driver died or it finished: everyone re-reads
                    self._seq[run_id] = max(state.last_seq, self._seq.get(run_id, 0))
                    self.publish(run_id)
                elif state.last_seq > self._seq.get(run_id, 0):  # written by another process
                    self.publish(run_id, state.last_seq)  # wakes only those that have not read it
                self._state[run_id] = key

    async def aclose(self) -> None:
        for task in (self._watcher, self._listening):
            if task is not None and not task.done() and task.get_loop() is _running_loop():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._watcher = self._listening = None
        self._live.clear()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _finished_or_foreign(task: asyncio.Task[None] | None, loop: asyncio.AbstractEventLoop) -> bool:
    return task is None or task.done() or task.get_loop() is not loop
